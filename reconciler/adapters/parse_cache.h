#pragma once
// The persistent parse cache: what parsing a JobSpec, the cluster file or a status file gave,
// kept on disk by content, so that a one-off command (`plan`, `sync`, `history`) or a restarted
// daemon parses only the files that changed since the last run (docs/operations.md, "The parse
// cache"). One file per repository, beside its clone under the cache directory (ParseCachePath).
//
// Keyed by content: a JobSpec by (blob id, path, jobs folder), since the default name derives
// from the path; the cluster file by (blob id, path); a status record by blob id (only records
// that decoded: a file that did not is parsed again, and reported as before). Every key is
// scoped by the program version and the codec's format version, both in the file's header: a
// file written by another build or format is never used.
//
// Never trusted, never fatal: a file that is missing, truncated, fails its checksum, has
// another version, or holds an entry that does not decode is set aside (the entry or the whole
// file) and rebuilt by the next Save, while the run goes on parsing as if there were no cache.
//
// Bounded: a save that rewrites the file (see below) keeps every entry used since
// the last save (found, put or kept), and of the others the most recently used, at most as many
// as were used plus kSpareEntries. So the file holds the current trees plus a margin of older
// versions, and does not grow as specs change.
//
// Written only when something changed: a run that parsed nothing leaves the file as it was.
// A save that only adds entries appends them to the file as one segment (its own checksum, one
// write), so a one-file push costs the daemon one small write, not a copy of every entry. A
// save rewrites the whole file instead (to a temporary file in the same folder, fsync, rename:
// never a torn file) when the file as loaded could not be used, an entry was dropped, another
// process wrote the file since this one read it, the entries no longer used exceed
// kSpareEntries, or the appended segments outgrow the rest of the file. A segment cut short (a
// crash, or a reader racing a writer) or of another build is ignored, and the next save
// rewrites the file; two processes saving at once leave whole segments or one whole file.
//
// Thread-safe: every member function takes the cache's lock. The daemon uses it from its pass
// thread, through the desired-state source and the status store.

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "reconciler/core/result.h"
#include "reconciler/core/spec_model.h"
#include "reconciler/core/status_model.h"
#include "reconciler/spec/loaded_job_spec.h"
#include "reconciler/spec/parse_cache_codec.h"
#include "reconciler/spec/spec_loader.h"

namespace rg::adapters {

// `<cache_dir>/<stem>-<hash>.parse-cache`, named as the clone of `repo_url` is
// (GitCacheDirName) so that a clone and its cache sit side by side; a repository read in place
// is named by its absolute path the same way. Empty cache_dir: DefaultGitCacheDir().
std::string ParseCachePath(const std::string& cache_dir, std::string_view repo_url);

// A JobSpec file as the cache gives it back: what it parsed to. (Its text is not kept: a
// pass needs the texts of the specs it submits only, and reads those from Git.)
struct CachedSpecFile {
  std::shared_ptr<const spec::LoadedJobSpec> loaded;
};

struct CachedClusterFile {
  std::string text;
  spec::Parsed<core::RayConfig> parsed;
};

class ParseCache {
 public:
  // Older entries kept beyond those used since the last Save (see the bound above).
  static constexpr size_t kSpareEntries = 1000;
  // Entries put and not yet written are written to the file (appended as a segment, or the
  // file written afresh keeping every entry) once their payloads reach this many bytes, and
  // read from it like loaded ones after: a cold pass over 50,000 specs holds 4 MB of them,
  // not 160 MB until the end. Save still decides what the file keeps.
  static constexpr size_t kSpillBytes = size_t{4} << 20;

  // Reads the file at `path` whole and keeps its index; entries are read again and decoded only
  // when looked up. A file that cannot be used gives an empty cache, and load_problem() says
  // why. `program_version` identifies the build whose parsers made the entries (a version
  // string, plus whatever tells two builds of one version apart).
  ParseCache(std::string path, std::string program_version);
  ~ParseCache();
  ParseCache(const ParseCache&) = delete;
  ParseCache& operator=(const ParseCache&) = delete;

  // nullopt on a miss (or an entry that does not decode, which is dropped).
  std::optional<CachedSpecFile> FindSpec(std::string_view blob_id, std::string_view path,
                                         std::string_view jobs_dir);
  std::optional<CachedClusterFile> FindCluster(std::string_view blob_id, std::string_view path);
  std::optional<core::StatusRecord> FindStatus(std::string_view blob_id);

  void PutSpec(std::string_view blob_id, std::string_view path, std::string_view jobs_dir,
               const spec::LoadedJobSpec& loaded);
  void PutCluster(std::string_view blob_id, std::string_view path, std::string_view text,
                  const spec::Parsed<core::RayConfig>& parsed);
  void PutStatus(std::string_view blob_id, const core::StatusRecord& record);

  // Marks an entry as used without decoding it, for a caller that holds it decoded already (an
  // in-memory hit): it is kept by the next Save. Nothing when there is no such entry. (Specs
  // have none: with a parse cache the desired-state source holds no parsed spec of its own.)
  void KeepCluster(std::string_view blob_id, std::string_view path);
  void KeepStatus(std::string_view blob_id);

  // Writes the file when anything changed since it was read or last saved (an entry put or
  // dropped, a file that could not be used), creating its folder; otherwise does nothing.
  // An error (a read-only cache directory, a full disk) leaves the old file in place and the
  // cache as it was, to be saved again later; callers log it, at debug level at most.
  core::Status Save();

  // Gives back the memory the file and its entries take, when nothing is left to save; the
  // next lookup reads the file again. The daemon calls it between passes: at rest it holds
  // its jobs' records, not every spec it ever parsed.
  void Release();
  // False after Release until the next use: a caller reading a few entries can then do
  // without, rather than read the whole file back.
  bool held() const;

  const std::string& path() const { return path_; }
  // Why the file as found was not used ("" when it was, or there was none).
  std::string load_problem() const;
  size_t size() const;  // entries held now (0 after Release until the next use)
  // Files written since construction.
  int saves() const;
  // Times entries were written out before a save (kSpillBytes), and the bound (tests lower it).
  int spills() const;
  void set_spill_bytes(size_t bytes);

 private:
  // 32 bytes: the index holds one per spec and status file (100,000 at 50,000 jobs), and
  // with its key each is one node of the map (80 bytes, against 112 with the payload held
  // inline as a string).
  struct Entry {
    // Where the payload is: buffer_[offset, offset + size), the file as read (at offset,
    // read again when looked up), or `owned`.
    enum Where : uint8_t { kBuffer, kFile, kOwned };
    Where where = kBuffer;
    bool unsaved = false;  // put since the file was last read or written
    uint32_t size = 0;     // a file is at most kMaxFileBytes (2 GiB)
    uint64_t offset = 0;
    uint64_t last_used = 0;              // the generation of the last Save period it was used in
    std::unique_ptr<std::string> owned;  // kOwned only
  };

  void Load();
  // The entries after the header: the base (duplicates fail) or a segment (later entries
  // replace earlier ones). False on a malformed list.
  bool LoadEntries(spec::ByteReader& r, bool replace);
  // The segments appended after the base, from `at` (an offset into buffer_): whole ones are
  // read, the first bad one and what follows are ignored and the file marked for rewriting.
  void LoadSegments(size_t at);
  void EnsureLoaded();  // after Release: reads the file again (mu_ held)
  bool LoadBody(std::string_view body);
  // The entry's payload; `scratch` holds it when it is read from the file. Empty when the file
  // reads short.
  std::string_view Payload(const Entry& e, std::string& scratch) const;
  void CloseFile();
  // The entry at `key`, marked used; nullptr on a miss.
  Entry* Use(const std::string& key);
  void Put(std::string key, std::string payload);
  void Drop(const std::string& key);
  // The entries a rewrite keeps, by key: every one used since the last save, then the most
  // recently used others up to the bound; none the file as loaded no longer holds whole.
  std::vector<std::pair<const std::string*, Entry*>> EntriesToKeep(bool all);
  // Writes the file afresh through a temporary file and a small buffer (the checksum computed
  // on the way, written into the header last), then renames it into place; the entries then
  // point into it, held open. On failure nothing changes.
  core::Status Rewrite(bool keep_all);
  // Writes the entries put so far to the file (kSpillBytes); a failure leaves them in memory
  // for the save, and no later spill is tried.
  void Spill();
  // True when a save must rewrite the file rather than append to it (see the file comment).
  bool MustRewrite() const;
  // Appends the unsaved entries as one segment; false when the file is not the one this cache
  // read or wrote (the caller rewrites it then), an error when the write fails.
  core::Result<bool> Append();

  const std::string path_;
  const std::string program_version_;
  mutable std::mutex mu_;
  std::string buffer_;   // the file as last written (while it loads: as read)
  int file_fd_ = -1;     // the file as read, while entries are read from it
  std::string scratch_;  // a payload read from the file
  std::unordered_map<std::string, Entry> entries_;
  uint64_t generation_ = 1;  // of this Save period; entries used in it carry it
  bool dirty_ = false;
  bool rewrite_ = false;     // the next save must rewrite the file
  size_t base_bytes_ = 0;    // the file's header and base, as read or last written
  size_t file_bytes_ = 0;    // the whole file, as read or last written (or appended to)
  uint64_t file_inode_ = 0;  // 0: no file read or written yet
  bool loaded_ = true;       // false after Release until the next use
  std::string load_problem_;
  int saves_ = 0;
  int spills_ = 0;
  size_t pending_bytes_ = 0;  // payloads held in memory, not yet in the file
  size_t spill_bytes_ = kSpillBytes;
  bool spill_failed_ = false;
};

}  // namespace rg::adapters
