#include "reconciler/core/identity.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <string>
#include <string_view>

#include "reconciler/core/ownership.h"

namespace rg::core {
namespace {

constexpr size_t kSpecHashLength = 10;
constexpr size_t kMaxJobNameLength = 63;
constexpr size_t kMaxPinnedIdLength = 100;
// A Ray driver JobID is written as 8 hex digits; an id of that shape would be ambiguous.
constexpr size_t kRayDriverJobIdLength = 8;

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

bool IsIdChar(char c) { return IsLowerAlnum(c) || c == '.' || c == '_' || c == '-'; }

bool IsHexDigit(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

// Ids and names share one alphabet: [a-z0-9._-], starting and ending with [a-z0-9].
bool IsIdShaped(std::string_view text, size_t max_length) {
  if (text.empty() || text.size() > max_length) return false;
  if (!IsLowerAlnum(text.front()) || !IsLowerAlnum(text.back())) return false;
  return std::ranges::all_of(text, IsIdChar);
}

bool EndsWithIgnoringCase(std::string_view text, std::string_view suffix) {
  if (text.size() < suffix.size()) return false;
  std::string_view tail = text.substr(text.size() - suffix.size());
  for (size_t i = 0; i < suffix.size(); ++i) {
    char c = tail[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != suffix[i]) return false;
  }
  return true;
}

std::string_view StripDotSlash(std::string_view path) {
  while (path.substr(0, 2) == "./") path.remove_prefix(2);
  return path;
}

}  // namespace

bool IsPolicyField(std::string_view key) {
  static constexpr std::array<std::string_view, 10> kPolicyFields = {
      "retries",  "suspend",     "on_remove",         "annotations", "deadline",
      "schedule", "concurrency", "starting_deadline", "timezone",    "infra_retries"};
  return std::ranges::find(kPolicyFields, key) != kPolicyFields.end();
}

namespace {

// The hash of `document` without the keys `leave_out` says to.
template <typename Pred>
std::string HashWithout(const Value& document, Pred leave_out, std::string_view instance = {},
                        const IdentityExtras& extras = {}) {
  const std::map<std::string, std::string, std::less<>>* after = extras.after_hashes;
  Value::Object identity;
  for (const auto& [key, value] : document.as_object()) {
    if (!leave_out(key)) identity.emplace(key, value);
  }
  // "@" never starts a spec key the loader accepts, so this never meets one written.
  if (!instance.empty() && instance != kDefaultInstance) {
    identity.emplace("@instance", Value(std::string(instance)));
  }
  if (after != nullptr) {
    Value::Object upstream;
    for (const auto& [name, hash] : *after) upstream.emplace(name, Value(hash));
    identity.emplace("@after", Value(std::move(upstream)));
  }
  if (!extras.code_tree.empty()) identity.emplace("@code", Value(std::string(extras.code_tree)));
  return Sha256Hex(ToCanonicalJson(Value(std::move(identity)))).substr(0, kSpecHashLength);
}

}  // namespace

std::string ComputeSpecHash(const Value& document, std::string_view instance) {
  // `name` is already the id's first part; leaving it out lets a moved file keep its run by
  // pinning its old name.
  return HashWithout(
      document, [](std::string_view key) { return key == "name" || IsPolicyField(key); }, instance);
}

std::string ComputeSpecHash(const Value& document, std::string_view instance,
                            const std::map<std::string, std::string, std::less<>>& after_hashes) {
  return ComputeSpecHash(document, instance, IdentityExtras{&after_hashes, {}});
}

std::string ComputeSpecHash(const Value& document, std::string_view instance,
                            const IdentityExtras& extras) {
  return HashWithout(
      document, [](std::string_view key) { return key == "name" || IsPolicyField(key); }, instance,
      extras);
}

void BindSpecToInstance(JobSpec& spec, std::string_view instance) {
  if (instance.empty() || instance == kDefaultInstance || !spec.document.is_object()) return;
  std::string bound = ComputeSpecHash(spec.document, instance);
  if (bound == spec.spec_hash) return;
  if (!spec.spec_hash.empty()) spec.legacy_spec_hashes.push_back(spec.spec_hash);
  spec.spec_hash = std::move(bound);
}

std::string ComputeLegacySpecHash(const Value& document) {
  static constexpr std::array<std::string_view, 4> kEarlierPolicyFields = {
      "retries", "suspend", "on_remove", "annotations"};
  std::string hash = HashWithout(document, [](std::string_view key) {
    return std::ranges::find(kEarlierPolicyFields, key) != kEarlierPolicyFields.end();
  });
  return hash == ComputeSpecHash(document) ? std::string() : hash;
}

bool IsValidJobName(std::string_view name) { return IsIdShaped(name, kMaxJobNameLength); }

bool IsValidPinnedSubmissionId(std::string_view id) {
  if (!IsIdShaped(id, kMaxPinnedIdLength)) return false;
  if (id.size() == kRayDriverJobIdLength) {
    if (std::ranges::all_of(id, IsHexDigit)) return false;
  }
  return true;
}

std::string DefaultJobName(std::string_view spec_path, std::string_view jobs_dir) {
  std::string_view path = StripDotSlash(spec_path);
  std::string_view dir = StripDotSlash(jobs_dir);
  while (!dir.empty() && dir.back() == '/') dir.remove_suffix(1);
  if (!dir.empty() && path.size() > dir.size() && path.substr(0, dir.size()) == dir &&
      path[dir.size()] == '/') {
    path.remove_prefix(dir.size() + 1);
  }
  if (EndsWithIgnoringCase(path, ".yaml")) {
    path.remove_suffix(5);
  } else if (EndsWithIgnoringCase(path, ".yml")) {
    path.remove_suffix(4);
  }
  std::string name;
  name.reserve(path.size());
  for (char c : path) {
    if (c == '/') {
      name += '-';
    } else if (c >= 'A' && c <= 'Z') {
      name += static_cast<char>(c - 'A' + 'a');
    } else {
      name += c;
    }
  }
  return name;
}

std::string SubmissionIdBase(const JobSpec& spec) {
  if (spec.submission_id.has_value()) return *spec.submission_id;
  // The loader fills spec_hash; a spec built in code without it still gets its true hash.
  std::string hash = spec.spec_hash.empty() && spec.document.is_object()
                         ? ComputeSpecHash(spec.document)
                         : spec.spec_hash;
  return spec.name + "-" + hash;
}

std::string SubmissionIdForAttempt(const JobSpec& spec, int attempt) {
  std::string id = SubmissionIdBase(spec);
  if (attempt >= 1) id += "-r" + std::to_string(attempt);
  return id;
}

std::string SubmissionIdForSlot(const JobSpec& spec, std::string_view slot, int attempt) {
  if (slot.empty()) return SubmissionIdForAttempt(spec, attempt);
  std::string id = SubmissionIdBase(spec) + "-" + std::string(slot);
  if (attempt >= 1) id += "-r" + std::to_string(attempt);
  return id;
}

std::optional<std::string_view> SlotOfSubmissionId(std::string_view base, std::string_view id) {
  constexpr size_t kSlotDigits = 12;
  if (id.size() < base.size() + 1 + kSlotDigits || id.substr(0, base.size()) != base ||
      id[base.size()] != '-') {
    return std::nullopt;
  }
  const std::string_view slot = id.substr(base.size() + 1, kSlotDigits);
  if (!std::ranges::all_of(slot, [](char c) { return c >= '0' && c <= '9'; })) return std::nullopt;
  const std::string_view rest = id.substr(base.size() + 1 + kSlotDigits);
  if (rest.empty()) return slot;
  if (rest.size() < 3 || rest.substr(0, 2) != "-r" ||
      !std::ranges::all_of(rest.substr(2), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  return slot;
}

std::string OneOffSubmissionId(const JobSpec& spec, int run) {
  std::string id = SubmissionIdBase(spec) + "-" + std::string(kSubmittedByCli);
  if (run >= 1) id += "-" + std::to_string(run);
  return id;
}

std::optional<int> OneOffRunOf(const JobSpec& spec, std::string_view id) {
  const std::string first = OneOffSubmissionId(spec, 0);
  if (id.substr(0, first.size()) != first) return std::nullopt;
  std::string_view rest = id.substr(first.size());
  if (rest.empty()) return 0;
  if (rest.size() < 2 || rest[0] != '-' || rest[1] < '1' || rest[1] > '9') return std::nullopt;
  rest.remove_prefix(1);
  int run = 0;
  const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), run);
  if (ec != std::errc() || end != rest.data() + rest.size()) return std::nullopt;
  return run;
}

}  // namespace rg::core
