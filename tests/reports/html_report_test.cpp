#include <doctest/doctest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "reports/html_report.h"
#include "reports/timeline_json.h"

using namespace megasim;

namespace {

// The JSON text between the data element's tags.
std::string data_of(const std::string& page) {
  const std::string open = R"(<script type="application/json" id="megasim-data">)";
  const auto from = page.find(open);
  REQUIRE(from != std::string::npos);
  const auto to = page.find("</script>", from);
  return page.substr(from + open.size(), to - from - open.size());
}

}  // namespace

TEST_CASE("html: the page embeds the JSON object intact and escapes what a user typed") {
  const nlohmann::json doc = {{"scenario", "a</script><script>alert(1)</script>"},
                              {"step_time_s", 6.046127}, {"list", {1, 2, 3}}};
  const std::string page = reports::html_page("simulate", "t <b>&", doc.dump(2));
  const std::string data = data_of(page);
  CHECK(data.find('<') == std::string::npos);  // no tag can close the element early
  CHECK(nlohmann::json::parse(data) == doc);   // yet it is the same object
  CHECK(page.find("<title>t &lt;b&gt;&amp;</title>") != std::string::npos);
  CHECK(page.find("<script>alert(1)") == std::string::npos);
  CHECK(page.find(R"(<body data-page="simulate">)") != std::string::npos);
  CHECK(page.find("{{") == std::string::npos);  // every slot of the template filled
  // The charting library and its licences travel with the page.
  CHECK(page.find("Apache License") != std::string::npos);
  CHECK(page.find("BSD 3-Clause License") != std::string::npos);
  CHECK(page.find("megasimTimeline") != std::string::npos);
  CHECK(page == reports::html_page("simulate", "t <b>&", doc.dump(2)));
  CHECK_THROWS_AS(reports::html_page("search", "t", "{}"), std::logic_error);
}

TEST_CASE("html: each page kind carries its own script only") {
  const std::string cmp = reports::html_page("compare", "c", R"({"variants": []})");
  CHECK(cmp.find("Pareto front") != std::string::npos);
  CHECK(cmp.find("megasimTimeline") == std::string::npos);
  const std::string val = reports::html_page("validate", "v", R"({"rows": []})");
  CHECK(val.find("Predicted against published") != std::string::npos);
}

TEST_CASE("html: the timeline keeps one rank per stage and merges overlapping sends") {
  const auto us = [](double x) { return Time::from_us(x); };
  const std::vector<step::TraceRecord> records = {
      {0, 0, "compute", "F mb0 c0", us(0), us(10), -1, {}, {}},
      {0, 0, "compute", "B mb0 c0", us(30), us(50), -1, {}, {}},
      {0, 0, "pp", "send", us(10), us(14), 8, {}, {}},
      {0, 0, "pp", "send", us(12), us(16), 8, {}, {}},  // overlaps the one before: one busy
                                                        // interval
      {0, 0, "pp", "send", us(20), us(22), 8, {}, {}},
      {0, 0, "dp", "reduce-scatter c0", us(50), us(60), -1, {}, {}},
      {8, 1, "compute", "F mb0 c0", us(14), us(24), -1, {}, {}},
      {9, 1, "compute", "F mb0 c0", us(14), us(24), -1, {}, {}},  // a second rank of stage 1: left
                                                                  // out
  };
  const nlohmann::json t = reports::timeline_json(records);
  REQUIRE(t["ranks"].size() == 2);
  const auto& r0 = t["ranks"][0];
  CHECK(r0["rank"] == 0);
  CHECK(r0["compute"]["F"] == nlohmann::json::parse("[[0, 10000]]"));
  CHECK(r0["compute"]["B"] == nlohmann::json::parse("[[30000, 50000]]"));
  CHECK(r0["pp_send"] == nlohmann::json::parse("[[10000, 16000], [20000, 22000]]"));
  CHECK(r0["dp"] == nlohmann::json::parse("[[50000, 60000]]"));
  CHECK(t["ranks"][1]["rank"] == 8);
  CHECK(t["ranks"][1]["compute"]["F"].size() == 1);
}
