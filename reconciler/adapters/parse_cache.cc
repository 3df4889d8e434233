#include "reconciler/adapters/parse_cache.h"

#include <fcntl.h>
#include <git2.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>
#include <vector>

#include "reconciler/adapters/fd_io.h"
#include "reconciler/adapters/git_workspace.h"
#include "reconciler/spec/parse_cache_codec.h"

namespace rg::adapters {
namespace {

namespace fs = std::filesystem;

// The file: magic, format version, checksum (XXH64 of the body), body size, then the body:
// the program version, the generation of the Save that wrote it, and the entries, each its
// key, the generation it was last used in, and its payload. Then any number of segments, each
// its magic, checksum and size, then a body laid out as the base's (program version,
// generation, entries).
constexpr std::string_view kMagic = "RGPARSE\n";
constexpr size_t kHeaderBytes = kMagic.size() + 4 + 8 + 8;
constexpr size_t kChecksumOffset = kMagic.size() + 4;
constexpr std::string_view kSegmentMagic = "RGPSEG1\n";
constexpr size_t kSegmentHeaderBytes = kSegmentMagic.size() + 8 + 8;
// Far beyond any real cache (10,000 specs take a few tens of MB): a larger file is not read.
constexpr uint64_t kMaxFileBytes = uint64_t{1} << 31;

constexpr char kSpecKind = 's';
constexpr char kClusterKind = 'c';
constexpr char kStatusKind = 'r';

// A Git object id in hex (SHA-1's 40 digits, lower case, as git::OidHex writes them) as its 20
// bytes: half the key.
bool AppendOidBytes(std::string& out, std::string_view hex) {
  const auto lower_hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); };
  git_oid oid;
  if (hex.size() != GIT_OID_HEXSZ || !std::ranges::all_of(hex, lower_hex) ||
      git_oid_fromstrn(&oid, hex.data(), hex.size()) != 0) {
    return false;
  }
  out.append(reinterpret_cast<const char*>(oid.id), GIT_OID_RAWSZ);
  return true;
}

// The kind, then the blob id: its 20 bytes, or (its kind's high bit set, so that the two forms
// never meet) as given when it is not a SHA-1 in hex; then the path and the jobs folder.
std::string Key(char kind, std::string_view blob_id, std::string_view path = {},
                std::string_view jobs_dir = {}) {
  std::string key;
  key.reserve(1 + blob_id.size() + path.size() + jobs_dir.size() + 2);
  key += kind;
  if (!AppendOidBytes(key, blob_id)) {
    key[0] = static_cast<char>(static_cast<unsigned char>(kind) | 0x80U);
    key += blob_id;
  }
  if (kind == kStatusKind) return key;
  key += '\0';
  key += path;
  if (kind == kClusterKind) return key;
  key += '\0';
  key += jobs_dir;
  return key;
}

std::string ErrnoText(std::string_view what, const std::string& path) {
  return std::string(what) + " " + path + ": " + std::strerror(errno);
}

struct FileBytes {
  std::string bytes;
  uint64_t inode = 0;  // 0 when there is no file
  int fd = -1;         // the file, open for reading; the caller closes it
};

// The whole file, or an error; a missing file is an empty string and no error.
core::Result<FileBytes> ReadWholeFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return FileBytes{};
    return core::Error::Transient(ErrnoText("cannot open", path));
  }
  struct stat st {};
  std::string out;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return core::Error::InvalidInput(path + " is not a regular file");
  }
  if (static_cast<uint64_t>(st.st_size) > kMaxFileBytes) {
    ::close(fd);
    return core::Error::InvalidInput(path + " is too large");
  }
  out.resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::read(fd, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  out.resize(done);  // a file cut meanwhile reads short and fails its checksum
  return FileBytes{std::move(out), static_cast<uint64_t>(st.st_ino), fd};
}

// `size` bytes at `offset` of `fd` into `out`; false when fewer could be read.
bool ReadAt(int fd, size_t offset, size_t size, std::string& out) {
  out.resize(size);
  size_t done = 0;
  while (done < size) {
    const ssize_t n =
        ::pread(fd, out.data() + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// Makes the rename itself durable; a failure here loses nothing but durability.
void SyncFolder(const fs::path& folder) {
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

// A new file beside `path`, to be renamed over it (InstallFile).
struct TempFile {
  std::string path;
  int fd = -1;
};

core::Result<TempFile> CreateTempBeside(const std::string& path) {
  static std::atomic<uint64_t> counter{0};
  const fs::path target(path);
  std::error_code ec;
  if (target.has_parent_path()) fs::create_directories(target.parent_path(), ec);
  TempFile tmp;
  tmp.path =
      path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1));
  tmp.fd = ::open(tmp.path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (tmp.fd < 0) return core::Error::Transient(ErrnoText("cannot create", tmp.path));
  return tmp;
}

// Gives up a temporary file: closed and removed.
core::Status Discard(TempFile& tmp, core::Error why) {
  ::close(tmp.fd);
  tmp.fd = -1;
  ::unlink(tmp.path.c_str());
  return why;
}

// fsync, then rename over `path` (never a torn file); the descriptor stays open, on the
// installed file. On failure the temporary file is closed and removed.
core::Status InstallFile(TempFile& tmp, const std::string& path) {
  if (::fsync(tmp.fd) != 0) {
    return Discard(tmp, core::Error::Transient(ErrnoText("cannot write", tmp.path)));
  }
  const fs::path target(path);
  std::error_code ec;
  // An empty folder in the file's place is taken away; anything else there makes rename fail.
  if (fs::is_directory(target, ec)) fs::remove(target, ec);
  if (::rename(tmp.path.c_str(), path.c_str()) != 0) {
    const std::string failed = ErrnoText("cannot rename " + tmp.path + " to", path);
    return Discard(tmp, core::Error::Transient(failed));
  }
  SyncFolder(target.has_parent_path() ? target.parent_path() : fs::path("."));
  return core::OkStatus();
}

// Writes to a file through a buffer, keeping the offset and the checksum of what it is told
// to hash: a file of any size is written without being held in memory.
class BufferedFileWriter {
 public:
  explicit BufferedFileWriter(int fd) : fd_(fd) {}

  bool Write(std::string_view bytes, bool hashed = true) {
    if (hashed) hasher_.Update(bytes);
    offset_ += bytes.size();
    if (buffer_.size() + bytes.size() > kBufferBytes && !Flush()) return false;
    if (bytes.size() >= kBufferBytes) return WriteAll(fd_, bytes);
    buffer_.append(bytes);
    return true;
  }
  bool Flush() {
    const bool written = WriteAll(fd_, buffer_);
    buffer_.clear();
    return written;
  }
  size_t offset() const { return offset_; }
  uint64_t checksum() const { return hasher_.Final(); }

 private:
  static constexpr size_t kBufferBytes = size_t{1} << 20;
  int fd_;
  std::string buffer_;
  size_t offset_ = 0;
  spec::Hasher64 hasher_;
};

}  // namespace

std::string ParseCachePath(const std::string& cache_dir, std::string_view repo_url) {
  std::string name = GitCacheDirName(repo_url);
  if (name.ends_with(".git")) name.resize(name.size() - 4);
  const fs::path dir = cache_dir.empty() ? fs::path(DefaultGitCacheDir()) : fs::path(cache_dir);
  return (dir / (name + ".parse-cache")).string();
}

ParseCache::ParseCache(std::string path, std::string program_version)
    : path_(std::move(path)), program_version_(std::move(program_version)) {
  Load();
}

void ParseCache::Load() {
  core::Result<FileBytes> read = ReadWholeFile(path_);
  if (!read.ok()) {
    load_problem_ = read.error().message();
    dirty_ = true;
    rewrite_ = true;
    return;
  }
  CloseFile();
  buffer_ = std::move(read->bytes);
  file_fd_ = read->fd;
  file_inode_ = read->inode;
  file_bytes_ = buffer_.size();
  base_bytes_ = 0;
  if (buffer_.empty()) return;  // no file yet (or an empty one: nothing to rebuild)
  spec::ByteReader header(buffer_);
  const std::string_view magic = header.Bytes(kMagic.size());
  const uint32_t version = header.U32();
  const uint64_t checksum = header.U64();
  const uint64_t body_size = header.U64();
  const std::string_view rest =
      std::string_view(buffer_).substr(std::min(kHeaderBytes, buffer_.size()));
  const std::string_view body = rest.substr(0, std::min<uint64_t>(body_size, rest.size()));
  if (!header.ok() || magic != kMagic) {
    load_problem_ = "not a parse cache file";
  } else if (version != spec::kParseCacheFormatVersion) {
    load_problem_ = "format version " + std::to_string(version) + ", not " +
                    std::to_string(spec::kParseCacheFormatVersion);
  } else if (body_size != body.size() || spec::Hash64(body) != checksum) {
    load_problem_ = "truncated or corrupt (checksum mismatch)";
  } else {
    spec::ByteReader r(body);
    if (!LoadEntries(r, /*replace=*/false) && load_problem_.empty()) {
      load_problem_ = "malformed index";
    }
  }
  if (!load_problem_.empty()) {
    entries_.clear();
    buffer_.clear();
    CloseFile();
    dirty_ = true;
    rewrite_ = true;
    return;
  }
  base_bytes_ = kHeaderBytes + body.size();
  LoadSegments(base_bytes_);
  // The payloads are read from the file again when looked up: the index is all that stays in
  // memory (at 50,000 specs the file is 80 MB). The file is held open, so a rewrite by another
  // process (a new file renamed into place) or an append changes nothing of what it reads.
  for (auto& [key, e] : entries_) {
    if (e.where == Entry::kBuffer) e.where = Entry::kFile;
  }
  std::string().swap(buffer_);
}

void ParseCache::CloseFile() {
  if (file_fd_ >= 0) ::close(file_fd_);
  file_fd_ = -1;
}

ParseCache::~ParseCache() { CloseFile(); }

bool ParseCache::LoadEntries(spec::ByteReader& r, bool replace) {
  if (r.StringView() != program_version_) {
    load_problem_ = "written by another build of ray-gitops";
    return false;
  }
  const uint64_t generation = r.U64();
  // An entry is at least two empty strings and a generation.
  const uint32_t count = r.Count(4 + 8 + 4);
  std::vector<std::pair<std::string, Entry>> read;
  read.reserve(count);
  for (uint32_t i = 0; i < count && r.ok(); ++i) {
    std::string key(r.StringView());
    Entry e;
    e.last_used = r.U64();
    const std::string_view payload = r.StringView();
    e.offset = static_cast<uint64_t>(payload.data() - buffer_.data());
    e.size = static_cast<uint32_t>(payload.size());
    read.emplace_back(std::move(key), std::move(e));
  }
  if (!r.ok() || !r.at_end()) return false;
  // Applied whole or not at all: a malformed list leaves the entries as they were.
  entries_.reserve(entries_.size() + read.size());
  if (replace) {
    for (auto& [key, e] : read) entries_.insert_or_assign(std::move(key), std::move(e));
  } else {
    for (auto& [key, e] : read) {
      if (!entries_.emplace(std::move(key), std::move(e)).second) return false;
    }
  }
  generation_ = std::max(generation_, generation + 1);
  return true;
}

void ParseCache::LoadSegments(size_t at) {
  while (at < buffer_.size()) {
    const std::string_view rest = std::string_view(buffer_).substr(at);
    spec::ByteReader header(rest);
    const std::string_view magic = header.Bytes(kSegmentMagic.size());
    const uint64_t checksum = header.U64();
    const uint64_t size = header.U64();
    const std::string_view after = rest.substr(std::min(kSegmentHeaderBytes, rest.size()));
    if (!header.ok() || magic != kSegmentMagic || size > after.size() ||
        spec::Hash64(after.substr(0, size)) != checksum) {
      break;  // cut short or damaged: ignored with what follows
    }
    spec::ByteReader r(after.substr(0, size));
    if (!LoadEntries(r, /*replace=*/true)) {
      load_problem_.clear();  // the base stands; only the segment is set aside
      break;
    }
    at += kSegmentHeaderBytes + size;
  }
  if (at < buffer_.size()) {
    dirty_ = true;
    rewrite_ = true;
  }
}

std::string_view ParseCache::Payload(const Entry& e, std::string& scratch) const {
  switch (e.where) {
    case Entry::kOwned:
      return *e.owned;
    case Entry::kBuffer:
      return std::string_view(buffer_).substr(e.offset, e.size);
    case Entry::kFile:
      break;
  }
  // Cut short (the file was truncated under us): an empty payload, which does not decode.
  if (file_fd_ < 0 || !ReadAt(file_fd_, e.offset, e.size, scratch)) return {};
  return scratch;
}

ParseCache::Entry* ParseCache::Use(const std::string& key) {
  auto it = entries_.find(key);
  if (it == entries_.end()) return nullptr;
  it->second.last_used = generation_;
  return &it->second;
}

void ParseCache::Put(std::string key, std::string payload) {
  Entry e;
  e.where = Entry::kOwned;
  e.unsaved = true;
  e.size = static_cast<uint32_t>(payload.size());
  e.owned = std::make_unique<std::string>(std::move(payload));
  e.last_used = generation_;
  pending_bytes_ += e.size;
  entries_.insert_or_assign(std::move(key), std::move(e));
  dirty_ = true;
  if (pending_bytes_ >= spill_bytes_ && !spill_failed_) Spill();
}

void ParseCache::Drop(const std::string& key) {
  entries_.erase(key);
  dirty_ = true;
  rewrite_ = true;
}

std::optional<CachedSpecFile> ParseCache::FindSpec(std::string_view blob_id, std::string_view path,
                                                   std::string_view jobs_dir) {
  const std::string key = Key(kSpecKind, blob_id, path, jobs_dir);
  std::lock_guard lock(mu_);
  EnsureLoaded();
  const Entry* e = Use(key);
  if (e == nullptr) return std::nullopt;
  spec::ByteReader r(Payload(*e, scratch_));
  CachedSpecFile out;
  auto loaded = std::make_shared<spec::LoadedJobSpec>();
  spec::DecodeFrom(r, *loaded);
  if (!r.ok() || !r.at_end()) {
    Drop(key);
    return std::nullopt;
  }
  out.loaded = std::move(loaded);
  return out;
}

std::optional<CachedClusterFile> ParseCache::FindCluster(std::string_view blob_id,
                                                         std::string_view path) {
  const std::string key = Key(kClusterKind, blob_id, path);
  std::lock_guard lock(mu_);
  EnsureLoaded();
  const Entry* e = Use(key);
  if (e == nullptr) return std::nullopt;
  spec::ByteReader r(Payload(*e, scratch_));
  CachedClusterFile out;
  out.text = r.String();
  spec::DecodeFrom(r, out.parsed);
  if (!r.ok() || !r.at_end()) {
    Drop(key);
    return std::nullopt;
  }
  return out;
}

std::optional<core::StatusRecord> ParseCache::FindStatus(std::string_view blob_id) {
  const std::string key = Key(kStatusKind, blob_id);
  std::lock_guard lock(mu_);
  EnsureLoaded();
  const Entry* e = Use(key);
  if (e == nullptr) return std::nullopt;
  core::Result<core::StatusRecord> record = spec::DecodeStatusRecord(Payload(*e, scratch_));
  if (!record.ok()) {
    Drop(key);
    return std::nullopt;
  }
  return std::move(*record);
}

void ParseCache::PutSpec(std::string_view blob_id, std::string_view path, std::string_view jobs_dir,
                         const spec::LoadedJobSpec& loaded) {
  spec::ByteWriter w;
  spec::EncodeTo(w, loaded);
  std::lock_guard lock(mu_);
  EnsureLoaded();
  Put(Key(kSpecKind, blob_id, path, jobs_dir), w.Take());
}

void ParseCache::PutCluster(std::string_view blob_id, std::string_view path, std::string_view text,
                            const spec::Parsed<core::RayConfig>& parsed) {
  spec::ByteWriter w;
  w.String(text);
  spec::EncodeTo(w, parsed);
  std::lock_guard lock(mu_);
  EnsureLoaded();
  Put(Key(kClusterKind, blob_id, path), w.Take());
}

void ParseCache::PutStatus(std::string_view blob_id, const core::StatusRecord& record) {
  std::string payload = spec::EncodeStatusRecord(record);
  std::lock_guard lock(mu_);
  EnsureLoaded();
  Put(Key(kStatusKind, blob_id), std::move(payload));
}

void ParseCache::KeepCluster(std::string_view blob_id, std::string_view path) {
  const std::string key = Key(kClusterKind, blob_id, path);
  std::lock_guard lock(mu_);
  EnsureLoaded();
  Use(key);
}

void ParseCache::KeepStatus(std::string_view blob_id) {
  const std::string key = Key(kStatusKind, blob_id);
  std::lock_guard lock(mu_);
  EnsureLoaded();
  Use(key);
}

std::vector<std::pair<const std::string*, ParseCache::Entry*>> ParseCache::EntriesToKeep(bool all) {
  // Every entry used in this period, then the most recently used others up to the bound.
  std::vector<std::pair<const std::string*, Entry*>> used;
  std::vector<std::pair<const std::string*, Entry*>> others;
  for (auto& [key, e] : entries_) {
    (all || e.last_used == generation_ ? used : others).emplace_back(&key, &e);
  }
  const size_t spare = std::min(others.size(), used.size() + kSpareEntries);
  std::partial_sort(others.begin(), others.begin() + static_cast<std::ptrdiff_t>(spare),
                    others.end(), [](const auto& a, const auto& b) {
                      return a.second->last_used != b.second->last_used
                                 ? a.second->last_used > b.second->last_used
                                 : *a.first < *b.first;
                    });
  used.insert(used.end(), others.begin(), others.begin() + static_cast<std::ptrdiff_t>(spare));
  std::sort(used.begin(), used.end(),
            [](const auto& a, const auto& b) { return *a.first < *b.first; });
  // What the file as loaded no longer holds whole (cut under us) is left out.
  struct stat st {};
  const size_t readable =
      file_fd_ >= 0 && ::fstat(file_fd_, &st) == 0 ? static_cast<size_t>(st.st_size) : 0;
  std::erase_if(used, [readable](const auto& kept) {
    return kept.second->where == Entry::kFile && kept.second->offset + kept.second->size > readable;
  });
  return used;
}

core::Status ParseCache::Rewrite(bool keep_all) {
  const std::vector<std::pair<const std::string*, Entry*>> keep = EntriesToKeep(keep_all);
  core::Result<TempFile> tmp = CreateTempBeside(path_);
  if (!tmp.ok()) return tmp.error();
  BufferedFileWriter out(tmp->fd);
  spec::ByteWriter head;
  head.Bytes(kMagic);
  head.U32(spec::kParseCacheFormatVersion);
  head.U64(0);  // the checksum, written last
  head.U64(0);  // the body size, written last
  bool ok = out.Write(head.bytes(), /*hashed=*/false);
  spec::ByteWriter w;
  w.String(program_version_);
  w.U64(generation_);
  w.U32(static_cast<uint32_t>(keep.size()));
  ok = ok && out.Write(w.bytes());
  std::unordered_map<std::string, Entry> kept;
  kept.reserve(keep.size());
  for (const auto& [key, e] : keep) {
    if (!ok) break;
    const std::string_view payload = Payload(*e, scratch_);
    if (payload.size() != e->size) {
      return Discard(*tmp, core::Error::Transient(path_ + " was cut while it was rewritten"));
    }
    spec::ByteWriter entry;
    entry.String(*key);
    entry.U64(e->last_used);
    entry.U32(static_cast<uint32_t>(payload.size()));
    ok = out.Write(entry.bytes());
    Entry moved;
    moved.where = Entry::kFile;
    moved.offset = out.offset();
    moved.size = static_cast<uint32_t>(payload.size());
    moved.last_used = e->last_used;
    ok = ok && out.Write(payload);
    kept.emplace(*key, std::move(moved));
  }
  spec::ByteWriter sums;
  sums.U64(out.checksum());
  sums.U64(out.offset() - kHeaderBytes);
  ok = ok && out.Flush() &&
       ::pwrite(tmp->fd, sums.bytes().data(), sums.size(), kChecksumOffset) ==
           static_cast<ssize_t>(sums.size());
  if (!ok) return Discard(*tmp, core::Error::Transient(ErrnoText("cannot write", tmp->path)));
  if (core::Status installed = InstallFile(*tmp, path_); !installed.ok()) return installed;
  // The entries now point into the new file, held open like a loaded one.
  CloseFile();
  file_fd_ = tmp->fd;
  std::string().swap(buffer_);
  entries_ = std::move(kept);
  struct stat st {};
  file_inode_ = ::fstat(file_fd_, &st) == 0 ? static_cast<uint64_t>(st.st_ino) : 0;
  file_bytes_ = out.offset();
  base_bytes_ = out.offset();
  pending_bytes_ = 0;
  return core::OkStatus();
}

void ParseCache::Spill() {
  // Appended to the file this cache read or wrote; else written afresh, every entry kept (the
  // save at the end of the period drops what was not used).
  if (file_inode_ != 0 && base_bytes_ != 0 && !rewrite_) {
    core::Result<bool> appended = Append();
    if (appended.ok() && *appended) {
      ++spills_;
      return;
    }
    if (!appended.ok()) rewrite_ = true;  // a failed write may have left part of a segment
  }
  if (Rewrite(/*keep_all=*/true).ok()) {
    rewrite_ = false;
    ++spills_;
    return;
  }
  spill_failed_ = true;
}

void ParseCache::EnsureLoaded() {
  if (loaded_) return;
  loaded_ = true;
  load_problem_.clear();
  Load();
}

void ParseCache::Release() {
  std::lock_guard lock(mu_);
  if (dirty_ || !loaded_) return;
  std::string().swap(buffer_);
  std::string().swap(scratch_);
  CloseFile();
  std::unordered_map<std::string, Entry>().swap(entries_);
  pending_bytes_ = 0;
  loaded_ = false;
}

bool ParseCache::held() const {
  std::lock_guard lock(mu_);
  return loaded_;
}

bool ParseCache::MustRewrite() const {
  if (rewrite_ || file_inode_ == 0 || base_bytes_ == 0) return true;
  size_t used = 0;
  for (const auto& [key, e] : entries_) used += e.last_used == generation_ ? 1 : 0;
  // A rewrite would drop entries no longer used; so would outgrown segments be folded in.
  return entries_.size() > used + kSpareEntries || file_bytes_ - base_bytes_ > base_bytes_;
}

core::Result<bool> ParseCache::Append() {
  spec::ByteWriter body;
  body.String(program_version_);
  body.U64(generation_);
  std::vector<std::pair<const std::string*, Entry*>> unsaved;
  for (auto& [key, e] : entries_) {
    if (e.unsaved) unsaved.emplace_back(&key, &e);
  }
  if (unsaved.empty()) return true;  // written already (spilled)
  body.U32(static_cast<uint32_t>(unsaved.size()));
  std::vector<size_t> offsets;  // of each payload in the body
  offsets.reserve(unsaved.size());
  for (const auto& [key, e] : unsaved) {
    body.String(*key);
    body.U64(e->last_used);
    const std::string_view payload = Payload(*e, scratch_);
    body.U32(static_cast<uint32_t>(payload.size()));
    offsets.push_back(body.size());
    body.Bytes(payload);
  }
  // The header apart from the body, not a copy of both: a spill's body is 16 MB.
  spec::ByteWriter header;
  header.Bytes(kSegmentMagic);
  header.U64(spec::Hash64(body.bytes()));
  header.U64(body.size());

  const int fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) return false;  // gone: written whole instead
  struct stat st {};
  // Appended only to the file as this cache last saw it; another writer's file is rewritten.
  if (::fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_ino) != file_inode_ ||
      static_cast<uint64_t>(st.st_size) != file_bytes_) {
    ::close(fd);
    return false;
  }
  // A reader sees the whole segment or a cut one, which it ignores (its body is short of the
  // size in its header, or does not hash to the hash there).
  const bool written =
      WriteAll(fd, header.bytes()) && WriteAll(fd, body.bytes()) && ::fdatasync(fd) == 0;
  const std::string why = written ? "" : ErrnoText("cannot append to", path_);
  ::close(fd);
  if (!written) return core::Error::Transient(why);
  const size_t body_at = file_bytes_ + kSegmentHeaderBytes;
  file_bytes_ += header.size() + body.size();
  for (size_t i = 0; i < unsaved.size(); ++i) {
    Entry& e = *unsaved[i].second;
    e.unsaved = false;
    // Read from the file from now on: the descriptor held is on the file appended to.
    if (file_fd_ < 0 || e.where != Entry::kOwned) continue;
    pending_bytes_ -= std::min(pending_bytes_, e.owned->size());
    e.owned.reset();
    e.where = Entry::kFile;
    e.offset = body_at + offsets[i];
  }
  return true;
}

core::Status ParseCache::Save() {
  std::lock_guard lock(mu_);
  EnsureLoaded();
  if (!dirty_) return core::OkStatus();
  if (!MustRewrite()) {
    core::Result<bool> appended = Append();
    if (!appended.ok()) {
      rewrite_ = true;  // a write that failed may have left part of a segment
      return appended.error();
    }
    if (*appended) {
      dirty_ = false;
      ++generation_;
      ++saves_;
      return core::OkStatus();
    }
  }
  // Written afresh; when that fails the entries stay as they were, and the cache stays dirty
  // to be saved again later.
  if (core::Status written = Rewrite(/*keep_all=*/false); !written.ok()) {
    rewrite_ = true;
    return written;
  }
  dirty_ = false;
  rewrite_ = false;
  ++generation_;
  ++saves_;
  return core::OkStatus();
}

std::string ParseCache::load_problem() const {
  std::lock_guard lock(mu_);
  return load_problem_;
}

size_t ParseCache::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

int ParseCache::saves() const {
  std::lock_guard lock(mu_);
  return saves_;
}

int ParseCache::spills() const {
  std::lock_guard lock(mu_);
  return spills_;
}

void ParseCache::set_spill_bytes(size_t bytes) {
  std::lock_guard lock(mu_);
  spill_bytes_ = bytes;
}

}  // namespace rg::adapters
