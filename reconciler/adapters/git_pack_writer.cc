#include "reconciler/adapters/git_pack_writer.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <unistd.h>
#include <zlib.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "reconciler/adapters/fd_io.h"
#include "reconciler/adapters/git_common.h"

namespace rg::adapters::git {
namespace {

constexpr size_t kBufferBytes = size_t{1} << 20;
constexpr size_t kHeaderBytes = 12;  // "PACK", version 2, the object count

void PutU32(char* out, uint32_t v) {
  out[0] = static_cast<char>(v >> 24U);
  out[1] = static_cast<char>(v >> 16U);
  out[2] = static_cast<char>(v >> 8U);
  out[3] = static_cast<char>(v);
}

// An object's header in a pack: its type in bits 4-6 of the first byte and its size in the
// low 4 bits, then 7 bits a byte, the high bit saying another byte follows.
void AppendObjectHeader(std::string& out, git_object_t type, size_t size) {
  auto byte = static_cast<unsigned char>((static_cast<unsigned>(type) << 4U) | (size & 0x0FU));
  size >>= 4U;
  while (size != 0) {
    out.push_back(static_cast<char>(byte | 0x80U));
    byte = static_cast<unsigned char>(size & 0x7FU);
    size >>= 7U;
  }
  out.push_back(static_cast<char>(byte));
}

struct IndexerFree {
  void operator()(git_indexer* i) const { git_indexer_free(i); }
};
struct DigestFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};

}  // namespace

struct PackWriter::Deflater {
  z_stream stream{};
};

void PackWriter::DeflaterFree::operator()(Deflater* d) const {
  deflateEnd(&d->stream);
  delete d;
}

core::Result<std::unique_ptr<PackWriter>> PackWriter::Create(git_repository* repo) {
  static std::atomic<uint64_t> counter{0};
  std::unique_ptr<PackWriter> w(new PackWriter());
  w->repo_ = repo;
  const std::filesystem::path folder =
      std::filesystem::path(git_repository_path(repo)) / "objects" / "pack";
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  w->path_ = (folder / (std::string(kPackTempPrefix) + std::to_string(::getpid()) + "_" +
                        std::to_string(counter.fetch_add(1))))
                 .string();
  w->fd_ = ::open(w->path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (w->fd_ < 0) {
    return core::Error::Transient("cannot create " + w->path_ + ": " + std::strerror(errno));
  }
  // Fast compression: status files are small, and a repack compresses them again.
  auto zlib = std::make_unique<Deflater>();
  if (deflateInit(&zlib->stream, Z_BEST_SPEED) != Z_OK) {
    return core::Error::Fatal("cannot start zlib for " + w->path_);
  }
  w->zlib_.reset(zlib.release());
  w->buffer_.reserve(kBufferBytes);
  w->buffer_.append("PACK", 4);
  w->buffer_.resize(kHeaderBytes);
  PutU32(w->buffer_.data() + 4, 2);
  PutU32(w->buffer_.data() + 8, 0);  // the count, written by Finish
  return w;
}

PackWriter::~PackWriter() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(path_.c_str());
  }
}

bool PackWriter::Flush() {
  const bool written = WriteAll(fd_, buffer_);
  buffer_.clear();
  return written;
}

core::Status PackWriter::Fail(const std::string& what) {
  return core::Error::Transient(what + " " + path_ + ": " + std::strerror(errno));
}

core::Result<git_oid> PackWriter::AddBlob(std::string_view content) {
  if (fd_ < 0) return core::Error::Fatal("the pack " + path_ + " is finished");
  git_oid id;
  if (int rc = git_odb_hash(&id, content.data(), content.size(), GIT_OBJECT_BLOB); rc != 0) {
    return LastError(rc, "cannot hash a blob");
  }
  if (!ids_.emplace(reinterpret_cast<const char*>(id.id), GIT_OID_RAWSZ).second) return id;
  AppendObjectHeader(buffer_, GIT_OBJECT_BLOB, content.size());
  z_stream& z = zlib_->stream;
  deflateReset(&z);
  const size_t at = buffer_.size();
  buffer_.resize(at + deflateBound(&z, content.size()));
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(content.data()));
  z.avail_in = static_cast<uInt>(content.size());
  z.next_out = reinterpret_cast<Bytef*>(buffer_.data() + at);
  z.avail_out = static_cast<uInt>(buffer_.size() - at);
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) {
    return core::Error::Fatal("zlib could not compress a blob for " + path_);
  }
  buffer_.resize(at + z.total_out);
  if (buffer_.size() >= kBufferBytes && !Flush()) return Fail("cannot write").error();
  return id;
}

core::Status PackWriter::Finish() {
  if (fd_ < 0) return core::Error::Fatal("the pack " + path_ + " is finished");
  core::Status installed = ids_.empty() ? core::OkStatus() : Install();
  ::close(fd_);
  fd_ = -1;
  ::unlink(path_.c_str());
  return installed;
}

core::Status PackWriter::Install() {
  std::array<char, 4> count{};
  PutU32(count.data(), static_cast<uint32_t>(ids_.size()));
  if (!Flush() || ::pwrite(fd_, count.data(), count.size(), 8) != 4) return Fail("cannot write");
  git_odb* raw_odb = nullptr;
  if (int rc = git_repository_odb(&raw_odb, repo_); rc != 0) {
    return LastError(rc, "cannot open the objects of " + std::string(git_repository_path(repo_)));
  }
  const Odb odb(raw_odb);
  const std::string folder = std::string(git_repository_path(repo_)) + "objects/pack";
  git_indexer* raw_indexer = nullptr;
  if (int rc = git_indexer_new(&raw_indexer, folder.c_str(), 0, odb.get(), nullptr); rc != 0) {
    return LastError(rc, "cannot index a pack in " + folder);
  }
  const std::unique_ptr<git_indexer, IndexerFree> indexer(raw_indexer);
  if (core::Status fed = FeedIndexer(indexer.get()); !fed) return fed;
  git_indexer_progress progress{};
  if (int rc = git_indexer_commit(indexer.get(), &progress); rc != 0) {
    return LastError(rc, "cannot index the pack " + path_);
  }
  // The object database finds a new pack on its first miss; now is as good.
  git_odb_refresh(odb.get());
  return core::OkStatus();
}

core::Status PackWriter::FeedIndexer(git_indexer* indexer) {
  const std::unique_ptr<EVP_MD_CTX, DigestFree> digest(EVP_MD_CTX_new());
  if (!digest || EVP_DigestInit_ex(digest.get(), EVP_sha1(), nullptr) != 1) {
    return core::Error::Fatal("cannot start SHA-1 for " + path_);
  }
  // The file read back, its SHA-1 computed on the way: the pack's trailer.
  git_indexer_progress progress{};
  std::string chunk(kBufferBytes, '\0');
  off_t offset = 0;
  while (true) {
    const ssize_t n = ::pread(fd_, chunk.data(), chunk.size(), offset);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Fail("cannot read");
    if (n == 0) break;
    offset += n;
    EVP_DigestUpdate(digest.get(), chunk.data(), static_cast<size_t>(n));
    if (int rc = git_indexer_append(indexer, chunk.data(), static_cast<size_t>(n), &progress);
        rc != 0) {
      return LastError(rc, "cannot index the pack " + path_);
    }
  }
  std::array<unsigned char, EVP_MAX_MD_SIZE> trailer{};
  unsigned int trailer_size = 0;
  EVP_DigestFinal_ex(digest.get(), trailer.data(), &trailer_size);
  if (int rc = git_indexer_append(indexer, trailer.data(), trailer_size, &progress); rc != 0) {
    return LastError(rc, "cannot index the pack " + path_);
  }
  return core::OkStatus();
}

}  // namespace rg::adapters::git
