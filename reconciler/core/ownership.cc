#include "reconciler/core/ownership.h"

#include <algorithm>
#include <array>
#include <utility>

#include "reconciler/core/render.h"

namespace rg::core {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string_view TrimUrl(std::string_view s) {
  auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  return s;
}

// No trailing "/" or ".git", in either order ("repo.git/", "repo/.git").
std::string_view StripRepoSuffixes(std::string_view path) {
  for (;;) {
    if (path.size() > 1 && path.back() == '/') {
      path.remove_suffix(1);
    } else if (path.ends_with(".git") && path.size() > 4) {
      path.remove_suffix(4);
    } else {
      return path;
    }
  }
}

// "a//b/./c/../d" -> "a/b/d", lexically; a leading "/" is kept, ".." at the root is dropped.
std::string NormalisePath(std::string_view path) {
  const bool absolute = path.starts_with('/');
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    std::string_view part = path.substr(start, end - start);
    if (part == "..") {
      if (!parts.empty() && parts.back() != "..") {
        parts.pop_back();
      } else if (!absolute) {
        parts.push_back(part);
      }
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    start = end + 1;
  }
  std::string out = absolute ? "/" : "";
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += '/';
    out += parts[i];
  }
  if (out.empty()) out = ".";
  return out;
}

std::string PathIdentity(std::string_view path) {
  std::string normal = NormalisePath(path);
  return std::string(StripRepoSuffixes(normal));
}

bool IsDefaultPort(std::string_view scheme, std::string_view port) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 6> kDefaults = {{
      {"ssh", "22"},
      {"git+ssh", "22"},
      {"ssh+git", "22"},
      {"http", "80"},
      {"https", "443"},
      {"git", "9418"},
  }};
  return std::ranges::any_of(kDefaults,
                             [&](const auto& d) { return d.first == scheme && d.second == port; });
}

// host[:port] in lower case without user info and without a default port.
std::string HostIdentity(std::string_view scheme, std::string_view authority) {
  if (size_t at = authority.rfind('@'); at != std::string_view::npos) {
    authority.remove_prefix(at + 1);
  }
  std::string_view host = authority;
  std::string_view port;
  const size_t bracket = authority.rfind(']');
  const size_t colon = authority.rfind(':');
  if (colon != std::string_view::npos && (bracket == std::string_view::npos || colon > bracket)) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  std::string out = Lower(host);
  if (!port.empty() && !IsDefaultPort(scheme, port)) out += ":" + std::string(port);
  return out;
}

// host + "/" + path, the path without leading or trailing slashes and without ".git".
std::string Join(std::string host, std::string_view path) {
  while (path.starts_with('/')) path.remove_prefix(1);
  path = StripRepoSuffixes(path);
  if (path == "/") path = "";
  if (!path.empty()) host += "/" + std::string(path);
  return host;
}

// The colon that ends the host of a scp-like URL ([user@]host:path, or [user@][v6addr]:path
// with an IPv6 address in brackets), or npos when `url` is none: a colon before any slash, and
// not a path that merely holds a colon.
size_t ScpColon(std::string_view url) {
  if (url.empty() || url.front() == '.' || url.front() == '/') return std::string_view::npos;
  size_t host_end = 0;
  if (const size_t open = url.find('[');
      open != std::string_view::npos && open < url.find(':') && open < url.find('/')) {
    host_end = url.find(']', open);
    if (host_end == std::string_view::npos) return std::string_view::npos;
  }
  const size_t colon = url.find(':', host_end);
  if (colon == std::string_view::npos || colon == 0) return std::string_view::npos;
  const size_t slash = url.find('/');
  return slash == std::string_view::npos || colon < slash ? colon : std::string_view::npos;
}

}  // namespace

std::string RepoIdentity(std::string_view url) {
  url = TrimUrl(url);
  if (url.empty()) return "";
  if (const size_t scheme_end = url.find("://"); scheme_end != std::string_view::npos) {
    const std::string scheme = Lower(url.substr(0, scheme_end));
    std::string_view rest = url.substr(scheme_end + 3);
    const size_t slash = rest.find('/');
    std::string_view authority = rest.substr(0, slash);
    std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash);
    if (scheme == "file") {
      // file:///srv/repo, and file://localhost/srv/repo for the same path.
      return PathIdentity(path.empty() ? authority : path);
    }
    if (size_t cut = path.find_first_of("?#"); cut != std::string_view::npos) {
      path = path.substr(0, cut);
    }
    return Join(HostIdentity(scheme, authority), path);
  }
  if (const size_t colon = ScpColon(url); colon != std::string_view::npos) {
    return Join(HostIdentity("ssh", url.substr(0, colon)), url.substr(colon + 1));
  }
  return PathIdentity(url);
}

void Ownership::AddPrevious(std::string_view url) {
  std::string identity = RepoIdentity(url);
  if (!identity.empty()) previous.try_emplace(std::move(identity), StripUrlCredentials(url));
}

namespace {

// RepoIdentity of the last URL asked for on this thread: a pass classifies every job, and the
// jobs of one repository carry one URL.
const std::string& CachedRepoIdentity(std::string_view url) {
  thread_local std::string last_url;
  thread_local std::string last_identity;
  thread_local bool filled = false;
  if (!filled || url != last_url) {
    last_identity = RepoIdentity(url);
    last_url.assign(url);
    filled = true;
  }
  return last_identity;
}

}  // namespace

namespace {

JobOwnership ClassifyByLabels(const RayJob& job, const Ownership& owner) {
  if (job.type == "DRIVER" || job.LabelView(kMetaManagedBy) != owner.instance) {
    return JobOwnership::kNotOurs;
  }
  // Every run ray-gitops submits names its repository and its spec: a job that lacks either
  // was not submitted by it (a job written by hand with a stray label), whatever else it says.
  const std::string_view recorded = job.LabelView(kMetaRepo);
  if (recorded.empty() || job.LabelView(kMetaSpecHash).empty()) return JobOwnership::kNotOurs;
  // No repository known to the caller: one that reads every run of its instance.
  if (owner.repo.empty()) return JobOwnership::kOurs;
  const std::string& identity = CachedRepoIdentity(recorded);
  if (identity == owner.repo || std::ranges::find(owner.aliases, identity) != owner.aliases.end()) {
    return JobOwnership::kOurs;
  }
  if (owner.previous.contains(identity)) return JobOwnership::kOursPrevious;
  return JobOwnership::kForeign;
}

}  // namespace

JobOwnership ClassifyJob(const RayJob& job, const Ownership& owner) {
  const JobOwnership by_labels = ClassifyByLabels(job, owner);
  if (IsOurs(by_labels) && !owner.disowned.empty() && owner.disowned.contains(job.submission_id)) {
    return JobOwnership::kDisowned;
  }
  return by_labels;
}

std::string DisownedMessage(std::string_view id, std::string_view what) {
  return "submission id " + std::string(id) +
         " is taken by a job that carries ray-gitops's labels but is not the run it renders (" +
         std::string(what) +
         "); not adopting, recording or stopping it (someone else submitted it: delete it from "
         "Ray, or change the spec to get a new id)";
}

std::string RecordedRepoOf(const RayJob& job) {
  std::string repo = StripUrlCredentials(job.Label(kMetaRepo));
  return repo.empty() ? std::string("an unnamed repository") : repo;
}

std::vector<ForeignRepository> GroupForeignJobs(const std::vector<RayJob>& foreign) {
  std::vector<ForeignRepository> out;
  std::map<std::string, size_t, std::less<>> index;  // identity -> position in `out`
  for (const RayJob& job : foreign) {
    const std::string repo = RecordedRepoOf(job);
    auto [it, added] = index.try_emplace(RepoIdentity(repo), out.size());
    if (added) out.push_back({repo, 0});
    ++out[it->second].jobs;
  }
  std::ranges::sort(
      out, [](const ForeignRepository& a, const ForeignRepository& b) { return a.repo < b.repo; });
  return out;
}

std::string ForeignJobsMessage(std::string_view instance, const ForeignRepository& other) {
  return "instance " + std::string(instance) + " on this cluster is also used by " + other.repo +
         " (" + std::to_string(other.jobs) + (other.jobs == 1 ? " job" : " jobs") +
         "); give each repository its own --instance";
}

}  // namespace rg::core
