#include "reconciler/core/boxed.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "reconciler/core/spec_model.h"

namespace rg::core {
namespace {

struct Pair {
  std::string a;
  std::vector<int> b;
  friend bool operator==(const Pair&, const Pair&) = default;
};

TEST_CASE("an empty box reads as a default value and holds nothing") {
  Boxed<Pair> box;
  CHECK(box.empty());
  CHECK(box.get() == Pair{});
  CHECK(box == Boxed<Pair>{});
  const Boxed<Pair> copy = box;
  CHECK(copy.empty());
}

TEST_CASE("a box copies deep and compares by value") {
  Boxed<Pair> box;
  box.mutable_get().a = "x";
  box.mutable_get().b = {1, 2};
  CHECK_FALSE(box.empty());

  Boxed<Pair> copy = box;
  CHECK(copy == box);
  CHECK(&copy.get() != &box.get());  // its own value, not a shared one
  copy.mutable_get().b.push_back(3);
  CHECK_FALSE(copy == box);
  CHECK(box.get().b == std::vector<int>{1, 2});

  Boxed<Pair> assigned;
  assigned = box;
  CHECK(assigned == box);
  // Self-assignment keeps the value (through a reference, as it happens in real code).
  const Boxed<Pair>& same = assigned;
  assigned = same;
  CHECK(assigned.get().a == "x");

  // A box holding a default value equals an empty one: the difference is memory, not meaning.
  Boxed<Pair> made_default;
  made_default.mutable_get();
  CHECK_FALSE(made_default.empty());
  CHECK(made_default == Boxed<Pair>{});
}

TEST_CASE("setting a default value leaves the box empty") {
  Boxed<Pair> box;
  box.set(Pair{"y", {}});
  CHECK_FALSE(box.empty());
  CHECK(box.get().a == "y");
  box.set(Pair{});
  CHECK(box.empty());

  Boxed<Pair> moved_from;
  moved_from.set(Pair{"z", {4}});
  Boxed<Pair> moved = std::move(moved_from);
  CHECK(moved.get().b == std::vector<int>{4});
}

TEST_CASE("a JobSpec keeps its trainer fields in a box that a custom job leaves empty") {
  JobSpec custom;
  custom.entrypoint = "python eval.py";
  CHECK(custom.trainer_fields.empty());
  CHECK_FALSE(custom.trainer().model_id.has_value());
  CHECK(custom.trainer_fields.empty());  // reading made nothing

  JobSpec ppo = custom;
  ppo.workload = Workload::kPpo;
  ppo.mutable_trainer().model_id = "Qwen/Qwen2.5-0.5B";
  ppo.mutable_trainer().overrides = {"trainer.logger=console"};
  CHECK_FALSE(ppo == custom);
  JobSpec copy = ppo;
  CHECK(copy == ppo);
  CHECK(copy.trainer().overrides == std::vector<std::string>{"trainer.logger=console"});
  copy.mutable_trainer().model_id = "other";
  CHECK(ppo.trainer().model_id == "Qwen/Qwen2.5-0.5B");
}

}  // namespace
}  // namespace rg::core
