#include "reports/html_report.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "engine/error.h"
#include "reports/compare_report.h"
#include "reports/html_assets.h"
#include "reports/json_text.h"
#include "reports/simulate_report.h"
#include "reports/validate_report.h"

namespace megasim::reports {
namespace {

// The licences of what the page carries: the bundle echarts.min.js holds ECharts, zrender, the
// d3 parts ECharts names, and tslib.
constexpr std::array<std::string_view, 5> kLicences = {
    "echarts/LICENSE", "echarts/NOTICE", "echarts/licenses/LICENSE-d3", "zrender/LICENSE",
    "tslib/LICENSE.txt"};

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  // Control bytes as \xNN, as on standard output: a scenario named with an ESC or a NUL wrote
  // them raw into the file's title, where `--html -` printed them escaped (a trial, 2026-12-07).
  for (const char c : printable(std::string(text))) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

// A JSON document on one line (the same object: the pretty-printed timeline would triple the
// page), safe inside <script type="application/json">: '<' only occurs inside JSON strings,
// where \u003c means the same character, so no "</script" can end the element early.
std::string script_json(std::string_view pretty) {
  const std::string json = json_text(nlohmann::json::parse(pretty), -1);
  std::string out;
  out.reserve(json.size());
  for (const char c : json) {
    if (c == '<') {
      out += "\\u003c";
    } else {
      out += c;
    }
  }
  return out;
}

// Scripts are inlined as they are; one that held "</script" would end its element early.
std::string inline_script(std::string_view name) {
  std::string text = embedded_file(name);
  std::string lower(text.size(), ' ');
  std::transform(text.begin(), text.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower.find("</script") != std::string::npos) {
    throw std::logic_error(fmt::format("html report: {} holds '</script'", name));
  }
  return text;
}

// The scripts that draw a page of `kind`, in order.
std::string page_scripts(std::string_view kind) {
  if (kind == "simulate") {
    return inline_script("timeline.js") + inline_script("run.js") + inline_script("simulate.js");
  }
  if (kind == "compare" || kind == "validate") return inline_script(std::string(kind) + ".js");
  throw std::logic_error(fmt::format("html report: no page kind '{}'", kind));
}

std::string licences() {
  std::string text;
  for (const std::string_view name : kLicences) {
    text += fmt::format("==== {} ====\n\n{}\n\n", name, embedded_file(name));
  }
  return html_escape(text);
}

// `page` with each {{name}} replaced by its value; inserted text is not scanned again.
std::string fill(const std::string& page,
                 const std::vector<std::pair<std::string_view, std::string>>& values) {
  std::string out;
  std::size_t at = 0;
  for (;;) {
    const std::size_t open = page.find("{{", at);
    if (open == std::string::npos) break;
    const std::size_t close = page.find("}}", open);
    if (close == std::string::npos) throw std::logic_error("page.html: unclosed {{");
    const std::string_view name(page.data() + open + 2, close - open - 2);
    const auto it = std::find_if(values.begin(), values.end(),
                                 [&](const auto& v) { return v.first == name; });
    if (it == values.end()) throw std::logic_error(fmt::format("page.html: no {{{{{}}}}}", name));
    out.append(page, at, open - at);
    out += it->second;
    at = close + 2;
  }
  out.append(page, at);
  return out;
}

}  // namespace

std::string html_page(std::string_view kind, std::string_view title, std::string_view json) {
  return fill(embedded_file("page.html"),
              {{"title", html_escape(title)},
               {"kind", std::string(kind)},
               {"style", embedded_file("report.css")},
               {"data", script_json(json)},
               {"echarts", inline_script("echarts.min.js")},
               {"common", inline_script("common.js")},
               {"page", page_scripts(kind)},
               {"licences", licences()}});
}

std::string simulate_html(const plan::Evaluation& e) {
  return html_page("simulate", "megasim simulate: " + e.inputs.scenario.name, simulate_json(e));
}

std::string compare_html(const std::vector<plan::Variant>& variants) {
  return html_page("compare", fmt::format("megasim compare: {} variants", variants.size()),
                   compare_json(variants));
}

std::string validate_html(const plan::Validation& v) {
  return html_page("validate", fmt::format("megasim validate: {} rows", v.rows.size()),
                   validate_json(v));
}

}  // namespace megasim::reports
