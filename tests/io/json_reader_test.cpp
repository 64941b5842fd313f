#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "engine/error.h"
#include "io/json_reader.h"
#include "input_error_of.h"

using megasim::InputError;
using megasim::io::closest_match;
using megasim::io::edit_distance;
using megasim::io::Json;
using megasim::io::JsonReader;
using megasim::io::parse_json_text;

using megasim::test::input_error_of;

namespace {
}  // namespace

TEST_CASE("json reader: edit distance and suggestions") {
  CHECK(edit_distance("tpp", "tp") == 1);
  CHECK(edit_distance("kitten", "sitting") == 3);
  CHECK(closest_match("tpp", {"tp", "pp", "dp", "vpp"}) == "tp");
  CHECK(closest_match("optimisations", {"optimizations", "plan"}) == "optimizations");
  CHECK(closest_match("zzzzzz", {"tp", "pp"}).empty());
}

TEST_CASE("json reader: unknown key names its path and the closest valid key") {
  const Json doc = Json::parse(R"({"plan": {"tp": 8, "tpp": 2}})");
  JsonReader root(doc, "", "s.json");
  JsonReader plan = root.object("plan");
  plan.integer("tp", 1, 64);
  plan.integer_or("pp", 1, 1, 64);
  const std::string msg = input_error_of([&] { plan.finish(); });
  CHECK(msg == "s.json: plan.tpp: unknown key; did you mean 'tp'?");
}

TEST_CASE("json reader: types and ranges are checked with the path in the message") {
  const Json doc = Json::parse(R"({"a": "8", "b": -1, "c": 1.5, "d": 3e3, "e": "x", "f": 2})");
  JsonReader r(doc, "plan", "s.json");
  CHECK(input_error_of([&] { r.integer("a", 1, 10); }) ==
        "s.json: plan.a: expected an integer, found a string (\"8\")");
  CHECK(input_error_of([&] { r.integer("b", 1, 10); }) ==
        "s.json: plan.b: -1 is out of range; expected an integer in [1, 10]");
  CHECK(input_error_of([&] { r.integer("c", 1, 10); }) == "s.json: plan.c: expected an integer, found 1.5");
  CHECK(r.integer("d", 1, 10000) == 3000);  // an integral float is an integer
  CHECK(input_error_of([&] { r.choice("e", {"none", "full"}); }).find("'x' is not one of 'none', 'full'") !=
        std::string::npos);
  CHECK(input_error_of([&] { r.integer("missing", 1, 2); }) == "s.json: plan.missing: missing required key");
  CHECK(input_error_of([&] { r.string("f"); }) == "s.json: plan.f: expected a string, found an integer (2)");
  // null once, not "found null (null)" (a user's trial, 2026-12-06).
  const Json nulls = Json::parse(R"({"n": null})");
  JsonReader n(nulls, "power", "s.json");
  CHECK(input_error_of([&] { n.number("n", 0, 1); }) ==
        "s.json: power.n: expected a number, found null");
  CHECK(input_error_of([&] { n.integer("n", 0, 1); }) ==
        "s.json: power.n: expected an integer, found null");
  CHECK(input_error_of([&] { n.boolean_or("n", false); }) ==
        "s.json: power.n: expected true or false, found null");
  CHECK(input_error_of([&] { n.string("n"); }) == "s.json: power.n: expected a string, found null");
}

TEST_CASE("json reader: malformed text is reported with the parser's position") {
  CHECK(input_error_of([] { parse_json_text("{\"a\": ", "x.json"); }).find("x.json: invalid JSON: line 1") == 0);
  CHECK(input_error_of([] { parse_json_text("  \n", "x.json"); }) ==
        "x.json: empty input; expected a JSON document");
  CHECK(input_error_of([] { parse_json_text(std::string("{\0}", 3), "x.json"); })
            .find("not a JSON text file (binary byte 0x00 at offset 1)") != std::string::npos);
  CHECK(input_error_of([] { parse_json_text(std::string(200, '[') + std::string(200, ']'), "x.json"); }) ==
        "x.json: JSON nested deeper than 64 levels");
  // Brackets inside strings do not count as nesting.
  CHECK(parse_json_text("{\"a\": \"" + std::string(200, '[') + "\"}", "x.json").is_object());
}

TEST_CASE("json reader: the key log records every key asked with arrays as brackets") {
  const Json doc = Json::parse(R"({"x": {"y": 1}, "list": [{"k": 1}, {"k": 2}]})");
  megasim::io::KeyLog log;
  JsonReader r(doc, "", "f", &log);
  r.object("x").integer("y", 0, 9);
  for (auto& e : r.object_array("list")) e.integer("k", 0, 9);
  r.optional_number("absent", 0, 1);
  CHECK(log == megasim::io::KeyLog{"x", "x.y", "list", "list[].k", "absent"});
}

TEST_CASE("json reader: value count and string length are bounded before parsing") {
  // 2^21 + 1 values: "[0,0,...]" has one opener and 2^21 commas.
  std::string many = "[0";
  for (std::size_t i = 0; i < megasim::io::kMaxJsonValues; ++i) many += ",0";
  many += "]";
  CHECK(input_error_of([&] { parse_json_text(many, "x.json"); })
            .find("x.json: about 2097153 JSON values, more than the 2097152") == 0);
  const std::string longest = "\"" + std::string(megasim::io::kMaxJsonStringBytes + 1, 'a') + "\"";
  CHECK(input_error_of([&] { parse_json_text(longest, "x.json"); })
            .find("x.json: a JSON string of 1048577 bytes") == 0);
  // Exactly at the limit is accepted.
  CHECK(parse_json_text("\"" + std::string(megasim::io::kMaxJsonStringBytes, 'a') + "\"", "x.json")
            .is_string());
}

TEST_CASE("json reader: a decorated spelling of a missing required key is named as unknown") {
  const Json doc = Json::parse(R"({"tp_size": 8, "pp": 2})");
  JsonReader r(doc, "plan", "s.json");
  CHECK(input_error_of([&] { r.integer("tp", 1, 8); }) ==
        "s.json: plan.tp_size: unknown key; did you mean 'tp'?");
  // A near key that is valid in its own right ("pp" for "tp") is not taken for a misspelling.
  const Json other = Json::parse(R"({"pp": 2})");
  JsonReader o(other, "plan", "s.json");
  CHECK(input_error_of([&] { o.integer("tp", 1, 8); }) == "s.json: plan.tp: missing required key");
}

TEST_CASE("json reader: -0 reads as 0, in a number and in an array of numbers") {
  // A scenario's "usd_per_kwh": -0.0 printed "$-0" and "-0 t CO2" until 2026-12-06, where
  // --set's route gave 0.
  const Json doc = Json::parse(R"({"x": -0.0, "xs": [-0.0, 1.5]})");
  JsonReader r(doc, "power", "s.json");
  const double x = r.number("x", 0.0, 1.0);
  CHECK(x == 0.0);
  CHECK_FALSE(std::signbit(x));
  const auto xs = r.number_array("xs", 0.0, 2.0, 2, 2);
  CHECK_FALSE(std::signbit(xs[0]));
  CHECK(xs[1] == 1.5);
}

TEST_CASE("json reader: a float of 2^63 is past every integer, whatever the bound") {
  // 9.223372036854775808e18 is not above INT64_MAX as a double: it passed the bound and its
  // cast to int64 was undefined (read as -2^63) until 2026-12-06.
  const Json doc = Json::parse(R"({"n": 9.223372036854775808e18, "m": 9.2e18})");
  JsonReader r(doc, "plan", "s.json");
  CHECK(input_error_of([&] { r.integer("n", 0, INT64_MAX); }).find("is out of range") !=
        std::string::npos);
  CHECK(r.integer("m", 0, INT64_MAX) == 9200000000000000000);
}
