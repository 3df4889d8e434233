#include "reconciler/core/string_map.h"

#include <array>
#include <cstring>
#include <functional>
#include <limits>
#include <stdexcept>

namespace rg::core {

namespace {

constexpr size_t kHeaderBytes = 8;

uint32_t Read32(const char* at) {
  uint32_t v = 0;
  std::memcpy(&v, at, sizeof v);
  return v;
}

uint32_t Length32(std::string_view text) {
  if (text.size() > std::numeric_limits<uint32_t>::max()) {
    throw std::length_error("StringMap: a key or value of 4 GiB or more");
  }
  return static_cast<uint32_t>(text.size());
}

struct RawEntry {
  std::string_view key;
  std::string_view value;
  size_t bytes = 0;
};

RawEntry EntryAt(const char* at) {
  const uint32_t key = Read32(at);
  const uint32_t value = Read32(at + 4);
  return {{at + kHeaderBytes, key}, {at + kHeaderBytes + key, value}, kHeaderBytes + key + value};
}

size_t EntryBytes(std::string_view key, std::string_view value) {
  return kHeaderBytes + key.size() + value.size();
}

void PutEntry(std::string& out, std::string_view key, std::string_view value) {
  const std::array<uint32_t, 2> lengths = {Length32(key), Length32(value)};
  out.append(reinterpret_cast<const char*>(lengths.data()), sizeof lengths);
  out.append(key);
  out.append(value);
}

}  // namespace

StringMap::Entry StringMap::Iterator::operator*() const {
  const RawEntry e = EntryAt(at_);
  return {e.key, e.value};
}

StringMap::Iterator& StringMap::Iterator::operator++() {
  at_ += EntryAt(at_).bytes;
  return *this;
}

StringMap::StringMap(std::initializer_list<std::pair<std::string_view, std::string_view>> entries) {
  for (const auto& [key, value] : entries) emplace(key, value);
}

StringMap::StringMap(const std::map<std::string, std::string, std::less<>>& entries) {
  size_t bytes = 0;
  for (const auto& [key, value] : entries) bytes += EntryBytes(key, value);
  data_.reserve(bytes);
  for (const auto& [key, value] : entries) Append(key, value);
}

size_t StringMap::LowerBound(std::string_view key) const {
  size_t at = 0;
  while (at < data_.size()) {
    const RawEntry e = EntryAt(data_.data() + at);
    if (e.key >= key) return at;
    at += e.bytes;
  }
  return at;
}

StringMap::Iterator StringMap::find(std::string_view key) const {
  const size_t at = LowerBound(key);
  if (at < data_.size() && EntryAt(data_.data() + at).key == key) {
    return Iterator(data_.data() + at);
  }
  return end();
}

std::string_view StringMap::at(std::string_view key) const {
  const Iterator it = find(key);
  if (it == end()) throw std::out_of_range("StringMap::at: no entry " + std::string(key));
  return (*it).second;
}

void StringMap::Splice(size_t at, size_t old_bytes, std::string_view key,
                       const std::string_view* value) {
  std::string next;
  next.reserve(data_.size() - old_bytes + (value != nullptr ? EntryBytes(key, *value) : 0));
  next.append(data_, 0, at);
  if (value != nullptr) PutEntry(next, key, *value);
  next.append(data_, at + old_bytes);
  data_ = std::move(next);
}

void StringMap::FindLast() {
  last_ = 0;
  size_t at = 0;
  while (at < data_.size()) {
    last_ = static_cast<uint32_t>(at);
    at += EntryAt(data_.data() + at).bytes;
  }
}

void StringMap::insert_or_assign(std::string_view key, std::string_view value) {
  const size_t at = LowerBound(key);
  if (at == data_.size()) {
    Append(key, value);
    return;
  }
  const RawEntry e = EntryAt(data_.data() + at);
  if (e.key == key) {
    Splice(at, e.bytes, key, &value);
  } else {
    Splice(at, 0, key, &value);
    ++count_;
  }
  FindLast();
}

bool StringMap::emplace(std::string_view key, std::string_view value) {
  const size_t at = LowerBound(key);
  if (at == data_.size()) return Append(key, value);
  if (EntryAt(data_.data() + at).key == key) return false;
  Splice(at, 0, key, &value);
  ++count_;
  FindLast();
  return true;
}

size_t StringMap::erase(std::string_view key) {
  const size_t at = LowerBound(key);
  if (at == data_.size()) return 0;
  const RawEntry e = EntryAt(data_.data() + at);
  if (e.key != key) return 0;
  Splice(at, e.bytes, {}, nullptr);
  --count_;
  FindLast();
  return 1;
}

void StringMap::clear() {
  data_.clear();
  data_.shrink_to_fit();
  count_ = 0;
  last_ = 0;
}

bool StringMap::Append(std::string_view key, std::string_view value) {
  const std::less<> before;
  auto inside = [&](std::string_view text) {
    return !text.empty() && !before(text.data(), data_.data()) &&
           before(text.data(), data_.data() + data_.size());
  };
  if (inside(key) || inside(value)) {  // a view into this buffer, which may move as it grows
    const std::string key_copy(key);
    const std::string value_copy(value);
    return Append(key_copy, value_copy);
  }
  if (count_ > 0 && !(EntryAt(data_.data() + last_).key < key)) return false;
  if (data_.size() > std::numeric_limits<uint32_t>::max()) {
    throw std::length_error("StringMap: 4 GiB or more");
  }
  last_ = static_cast<uint32_t>(data_.size());
  PutEntry(data_, key, value);
  ++count_;
  return true;
}

}  // namespace rg::core
