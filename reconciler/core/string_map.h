#pragma once
// A small map of strings to strings held in one buffer: a spec's env_vars and annotations, a
// Ray job's metadata. A pass holds one per spec and one per Ray job, 50,000 of each at scale,
// and a std::map of seven entries took about 900 bytes in fourteen allocations where this takes
// one of about 300 (docs/performance.md).
//
// Entries are kept sorted by key (bytes compared as unsigned, as std::string compares), each
// key once. Lookups scan the entries in order; an insertion or a removal copies the buffer.
// Both suit maps of tens of entries. Iterators, and the views they give, are valid until the
// map changes.

#include <compare>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <map>
#include <string>
#include <string_view>
#include <utility>

namespace rg::core {

class StringMap {
 public:
  // What an iterator gives: views into the map's buffer.
  struct Entry {
    std::string_view first;   // the key
    std::string_view second;  // the value
  };

  class Iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = Entry;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = Entry;

    Iterator() = default;
    Entry operator*() const;
    // it->first and it->second, as a std::map's iterator gives them.
    struct Arrow {
      Entry entry;
      const Entry* operator->() const { return &entry; }
    };
    Arrow operator->() const { return {**this}; }
    Iterator& operator++();
    Iterator operator++(int) {
      Iterator before = *this;
      ++*this;
      return before;
    }
    friend bool operator==(const Iterator&, const Iterator&) = default;

   private:
    friend class StringMap;
    explicit Iterator(const char* at) : at_(at) {}
    const char* at_ = nullptr;
  };
  using const_iterator = Iterator;
  using iterator = Iterator;

  // `map[key] = value`, as with a std::map.
  class Slot {
   public:
    Slot& operator=(std::string_view value) {
      map_->insert_or_assign(key_, value);
      return *this;
    }

   private:
    friend class StringMap;
    Slot(StringMap* map, std::string_view key) : map_(map), key_(key) {}
    StringMap* map_;
    std::string key_;
  };

  StringMap() = default;
  // Of two entries with one key the first is kept, as a std::map's constructor does.
  StringMap(std::initializer_list<std::pair<std::string_view, std::string_view>> entries);
  explicit StringMap(const std::map<std::string, std::string, std::less<>>& entries);

  Iterator begin() const { return Iterator(data_.data()); }
  Iterator end() const { return Iterator(data_.data() + data_.size()); }
  size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }

  Iterator find(std::string_view key) const;
  bool contains(std::string_view key) const { return find(key) != end(); }
  // The value under `key`; throws std::out_of_range when there is none.
  std::string_view at(std::string_view key) const;

  // Sets the value under `key`, adding the entry when there is none.
  void insert_or_assign(std::string_view key, std::string_view value);
  // Adds the entry when `key` has none; true when it did.
  bool emplace(std::string_view key, std::string_view value);
  Slot operator[](std::string_view key) { return {this, key}; }
  // Removes the entry under `key`; the number removed (0 or 1).
  size_t erase(std::string_view key);
  void clear();

  // Adds an entry whose key comes after every key held, in constant time (amortised): how a
  // decoder that reads keys in order builds a map. False, and nothing added, otherwise.
  bool Append(std::string_view key, std::string_view value);
  // Gives back what growing by Append left unused.
  void ShrinkToFit() { data_.shrink_to_fit(); }

  friend bool operator==(const StringMap& a, const StringMap& b) { return a.data_ == b.data_; }

 private:
  // Where the first entry whose key is not less than `key` starts (the end when none).
  size_t LowerBound(std::string_view key) const;
  // Replaces `old_bytes` bytes at `at` with the entry (key, value), or removes them when
  // `value` is null; the buffer is built anew at its exact size.
  void Splice(size_t at, size_t old_bytes, std::string_view key, const std::string_view* value);
  void FindLast();

  // Entries in key order, each a 4-byte key length, a 4-byte value length (both in the
  // machine's byte order), the key and the value.
  std::string data_;
  uint32_t count_ = 0;
  uint32_t last_ = 0;  // where the last entry starts (0 when empty)
};

}  // namespace rg::core
