#pragma once
// A status record as the schema's ordered fields (schema/status.schema.json): the one place
// that decides which keys a record has, in which order, and what is null. The status files
// (spec/status_codec, YAML) and /api/v1/status (server/status_page, JSON) both encode these,
// so the two cannot disagree.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reconciler/core/status_model.h"
#include "reconciler/core/value.h"

namespace rg::core {

struct StatusField {
  std::string_view key;
  Value value;           // null when unknown or empty
  bool is_time = false;  // an RFC 3339 UTC time (YAML writes it quoted)
};

// The two nulls of the records, for anything written beside them (the daemon's fields in
// /api/v1/status): an unset time is null, else RFC 3339 UTC with milliseconds; an empty
// string is null.
Value TimeOrNull(const std::optional<int64_t>& ms);
Value StringOrNull(const std::string& s);

// Every key of a record but `attempts`, in the schema's order. An unknown Ray status, an
// empty string and an unset optional are null; `errors` is a list, empty when there are none.
std::vector<StatusField> RecordFields(const StatusRecord& record);

// The keys of one entry of `attempts`, in the schema's order; `stop_sent_at` only when a stop
// was sent.
std::vector<StatusField> AttemptFields(const AttemptRecord& attempt);

// The keys of one entry of `skipped_slots` (a scheduled job's slots that got no run): `slot`
// (RFC 3339 UTC) and `reason`. A record without skipped slots has no `skipped_slots` key.
std::vector<StatusField> SkippedSlotFields(const SkippedSlot& slot);

// The whole record, attempts included, as one object (keys sorted): what JSON writers encode.
Value StatusRecordValue(const StatusRecord& record);

}  // namespace rg::core
