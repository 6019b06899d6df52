#include "bench/depbench/svg_charts.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "bench/depbench/scenarios/gradient_sync.h"

namespace depbench {
namespace {

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string fixed(double v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string svg_open(double width, double height, const std::string& id, const std::string& title) {
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"" + id + "\" width=\"" + num(width) + "\" height=\"" +
         num(height) + "\" viewBox=\"0 0 " + num(width) + " " + num(height) +
         "\" font-family=\"sans-serif\" font-size=\"12\" role=\"img\"><title>" + xml_escape(title) + "</title>";
}

std::string text(double x, double y, const std::string& s, const std::string& extra = "") {
  return "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\"" + (extra.empty() ? "" : " " + extra) + ">" +
         xml_escape(s) + "</text>";
}

std::string rect(double x, double y, double w, double h, const std::string& fill, const std::string& tip = "") {
  std::string r = "<rect x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" + fixed(std::max(w, 0.0), 2) +
                  "\" height=\"" + num(h) + "\" fill=\"" + fill + "\"";
  return tip.empty() ? r + "/>" : r + "><title>" + xml_escape(tip) + "</title></rect>";
}

std::string line(double x1, double y1, double x2, double y2, const std::string& style) {
  return "<line x1=\"" + num(x1) + "\" y1=\"" + num(y1) + "\" x2=\"" + num(x2) + "\" y2=\"" + num(y2) + "\" " +
         style + "/>";
}

// The bar charts' legend, from `x`: a grey sync and a blue async bar, a red ideal mark.
std::string sync_async_legend(double x, const std::string& ideal) {
  return rect(x, 8, 12, 12, "#9e9e9e") + text(x + 16, 18, "sync") + rect(x + 60, 8, 12, 12, "#4e79a7") +
         text(x + 76, 18, "async") + line(x + 130, 8, x + 130, 20, "stroke=\"#d62728\" stroke-width=\"2\"") +
         text(x + 136, 18, ideal);
}

// A stable colour per op name.
std::string colour(const std::string& name) {
  static const char* palette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                  "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
  std::size_t h = std::hash<std::string>{}(name);
  return palette[h % (sizeof palette / sizeof *palette)];
}

}  // namespace

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string speedup_bar_chart(const std::vector<ScenarioResult>& results) {
  const double label_w = 170, bar_w = 420, right_w = 150, row_h = 46, top = 30;
  const double width = label_w + bar_w + right_w, height = top + row_h * results.size() + 10;
  std::string s = svg_open(width, height, "speedup-chart", "Sync against async time per scenario");
  s += sync_async_legend(label_w, "ideal async time");
  for (std::size_t i = 0; i < results.size(); ++i) {
    const ScenarioResult& r = results[i];
    const double y = top + row_h * i;
    const double async_w = r.sync.seconds > 0 ? bar_w * std::min(1.5, r.async.seconds / r.sync.seconds) : 0;
    s += text(0, y + 24, r.name);
    s += rect(label_w, y + 4, bar_w, 16, "#9e9e9e", r.name + " sync: " + fixed(r.sync.seconds, 4) + " s");
    s += rect(label_w, y + 22, std::min(async_w, bar_w), 16, "#4e79a7",
              r.name + " async: " + fixed(r.async.seconds, 4) + " s");
    if (r.ideal_speedup > 0) {
      const double ideal_x = label_w + bar_w / r.ideal_speedup;
      s += line(ideal_x, y + 20, ideal_x, y + 40, "stroke=\"#d62728\" stroke-width=\"2\"");
    }
    s += text(label_w + bar_w + 8, y + 17, fixed(r.sync.seconds, 3) + " s");
    s += text(label_w + bar_w + 8, y + 35, fixed(r.async.seconds, 3) + " s  (" + fixed(r.speedup, 2) + "x)");
  }
  return s + "</svg>";
}

std::string strategy_chart(const ScenarioResult& r) {
  namespace gs = gradient_sync;
  std::vector<std::string> shown;
  double longest = 0;
  for (const std::string& s : gs::strategies()) {
    if (!r.async.metric_runs.contains(gs::metric(s, "seconds"))) continue;
    shown.push_back(s);
    for (const ModeResult* m : {&r.sync, &r.async}) {
      longest = std::max({longest, median_metric(*m, gs::metric(s, "seconds")), median_metric(*m, gs::metric(s, "ideal_s"))});
    }
  }
  if (shown.empty() || longest <= 0) return "";
  const double label_w = 130, bar_w = 460, right_w = 190, row_h = 46, top = 30;
  const double width = label_w + bar_w + right_w, height = top + row_h * shown.size() + 10;
  auto w = [&](double seconds) { return bar_w * seconds / longest; };
  std::string s = svg_open(width, height, "strategy-chart", "gradient_sync: each strategy's time and its ideal");
  s += sync_async_legend(label_w, "ideal (bottleneck bytes / bandwidth)");
  for (std::size_t i = 0; i < shown.size(); ++i) {
    const std::string& name = shown[i];
    const double y = top + row_h * i;
    const double sync_s = median_metric(r.sync, gs::metric(name, "seconds"));
    const double async_s = median_metric(r.async, gs::metric(name, "seconds"));
    const double ideal_s = median_metric(r.async, gs::metric(name, "ideal_s"));
    s += text(0, y + 24, name);
    s += rect(label_w, y + 4, w(sync_s), 16, "#9e9e9e", name + " sync: " + fixed(sync_s * 1e3, 2) + " ms");
    s += rect(label_w, y + 22, w(async_s), 16, "#4e79a7", name + " async: " + fixed(async_s * 1e3, 2) + " ms");
    s += line(label_w + w(ideal_s), y + 2, label_w + w(ideal_s), y + 40, "stroke=\"#d62728\" stroke-width=\"2\"");
    s += text(label_w + bar_w + 8, y + 17, fixed(sync_s * 1e3, 2) + " ms sync");
    s += text(label_w + bar_w + 8, y + 35,
              fixed(async_s * 1e3, 2) + " ms async (" + fixed(async_s / ideal_s, 2) + "x ideal)");
  }
  return s + "</svg>";
}

std::string roofline_plot(const ScenarioResult& r) {
  if (!r.details.is_array() || r.details.empty()) return "";
  const double peak = r.sync.metrics.at("peak_gflops"), bandwidth = r.sync.metrics.at("bandwidth_gbs");
  const double left = 70, top = 20, plot_w = 520, plot_h = 300;
  const double width = left + plot_w + 140, height = top + plot_h + 50;
  // Axes: powers of two around the data and the balance point.
  double xmin = 1.0 / 16, xmax = 256, ymin = 1e9, ymax = peak * 2;
  for (const auto& op : r.details) {
    if (op["flops"].get<double>() <= 0) continue;
    xmin = std::min(xmin, op["intensity"].get<double>() / 2);
    xmax = std::max(xmax, op["intensity"].get<double>() * 2);
    ymin = std::min(ymin, op["gflops"].get<double>() / 2);
  }
  ymin = std::min(ymin, bandwidth * xmin);
  const double lx0 = std::floor(std::log2(xmin)), lx1 = std::ceil(std::log2(xmax));
  const double ly0 = std::floor(std::log2(ymin)), ly1 = std::ceil(std::log2(ymax));
  auto px = [&](double x) { return left + plot_w * (std::log2(x) - lx0) / (lx1 - lx0); };
  auto py = [&](double y) { return top + plot_h * (1 - (std::log2(y) - ly0) / (ly1 - ly0)); };

  std::string s = svg_open(width, height, "roofline-plot", "Roofline: ops under the compute and bandwidth ceilings");
  s += rect(left, top, plot_w, plot_h, "#fafafa");
  for (double e = lx0; e <= lx1; e += 2) {
    s += line(px(std::exp2(e)), top, px(std::exp2(e)), top + plot_h, "stroke=\"#e0e0e0\"");
    s += text(px(std::exp2(e)) - 10, top + plot_h + 16, fixed(std::exp2(e), e < 0 ? 3 : 0));
  }
  for (double e = ly0; e <= ly1; e += 2) {
    s += line(left, py(std::exp2(e)), left + plot_w, py(std::exp2(e)), "stroke=\"#e0e0e0\"");
    s += text(4, py(std::exp2(e)) + 4, fixed(std::exp2(e), e < 0 ? 3 : 0));
  }
  s += text(left + plot_w / 2 - 110, top + plot_h + 36, "arithmetic intensity (FLOP/byte)");
  s += text(left - 60, top - 6, "GFLOP/s");
  // The ceilings: bandwidth * intensity up to the balance point, then the peak.
  const double balance = peak / bandwidth;
  const double x0 = std::exp2(lx0), x1 = std::exp2(lx1);
  s += line(px(x0), py(bandwidth * x0), px(balance), py(peak), "stroke=\"#d62728\" stroke-width=\"2\"");
  s += line(px(balance), py(peak), px(x1), py(peak), "stroke=\"#d62728\" stroke-width=\"2\"");
  s += line(px(balance), top, px(balance), top + plot_h, "stroke=\"#d62728\" stroke-dasharray=\"4 4\"");
  s += text(px(balance) + 4, top + plot_h - 6, "balance " + fixed(balance, 2) + " FLOP/B", "fill=\"#d62728\"");
  s += text(px(x1) - 150, py(peak) - 6, "peak " + fixed(peak, 1) + " GFLOP/s", "fill=\"#d62728\"");
  s += text(px(x0) + 4, py(bandwidth * x0) - 8, fixed(bandwidth, 1) + " GB/s", "fill=\"#d62728\"");
  int plotted = 0;
  for (const auto& op : r.details) {
    if (op["flops"].get<double>() <= 0) continue;  // a copy computes nothing: no point to plot
    const double x = px(op["intensity"].get<double>()), y = py(op["gflops"].get<double>());
    const std::string name = op["op"];
    s += "<circle cx=\"" + num(x) + "\" cy=\"" + num(y) + "\" r=\"5\" fill=\"" +
         (op["bound"] == "compute" ? std::string("#4e79a7") : std::string("#f28e2b")) + "\"><title>" +
         xml_escape(name + ": " + fixed(op["intensity"].get<double>(), 3) + " FLOP/byte, " +
                    fixed(op["gflops"].get<double>(), 2) + " GFLOP/s, " + op["bound"].get<std::string>() +
                    "-bound") +
         "</title></circle>";
    // Labels alternate above and below: neighbouring ops often sit close together.
    s += text(x + 7, y + (plotted++ % 2 ? 14 : -5), name);
  }
  s += rect(left + plot_w + 12, top + 10, 10, 10, "#4e79a7") + text(left + plot_w + 26, top + 19, "compute-bound");
  s += rect(left + plot_w + 12, top + 28, 10, 10, "#f28e2b") + text(left + plot_w + 26, top + 37, "bandwidth-bound");
  return s + "</svg>";
}

std::string timeline_chart(const Trace& trace, std::size_t max_ops) {
  std::vector<const depengine::ProfiledOp*> ops;
  for (const auto& op : trace.ops) {
    if (ops.size() == max_ops) break;
    ops.push_back(&op);
  }
  std::vector<std::string> tracks;
  std::map<std::string, int> row;
  double t0 = 1e300, t1 = 0;
  for (const auto* op : ops) {
    if (row.emplace(op->track, 0).second) tracks.push_back(op->track);
    t0 = std::min(t0, op->start_us);
    t1 = std::max(t1, op->start_us + op->duration_us);
  }
  std::sort(tracks.begin(), tracks.end());
  for (std::size_t i = 0; i < tracks.size(); ++i) row[tracks[i]] = static_cast<int>(i);
  if (ops.empty()) t0 = 0, t1 = 1;
  const double left = 190, plot_w = 760, row_h = 26, top = 10;
  const double span = std::max(t1 - t0, 1e-3);
  // The legend (op names in their colours) wraps under the axis.
  std::map<std::string, bool> names;
  for (const auto* op : ops) names[op->name] = true;
  std::vector<std::pair<double, int>> legend_at;  // x, line
  double lx = left;
  int legend_line = 0;
  for (const auto& entry : names) {
    const double w = 24 + 7.0 * entry.first.size();
    if (lx + w > left + plot_w && lx > left) lx = left, ++legend_line;
    legend_at.push_back({lx, legend_line});
    lx += w;
  }
  const double axis_y = top + row_h * tracks.size() + 14;
  const double height = axis_y + 20.0 * (legend_line + 1) + 6, width = left + plot_w + 10;
  std::string s = svg_open(width, height, "timeline-chart", "Timeline of one async run");
  for (std::size_t i = 0; i < tracks.size(); ++i) {
    s += rect(left, top + row_h * i, plot_w, row_h - 4, i % 2 ? "#f5f5f5" : "#ececec");
    s += text(4, top + row_h * i + 16, tracks[i]);
  }
  for (const auto* op : ops) {
    const double x = left + plot_w * (op->start_us - t0) / span;
    const double w = std::max(plot_w * op->duration_us / span, 0.5);
    std::string tip = op->name + " on " + op->device + ": " + fixed(op->duration_us, 1) + " us";
    if (!op->reads.empty()) tip += "; reads";
    for (const auto& v : op->reads) tip += " " + v;
    if (!op->writes.empty()) tip += "; writes";
    for (const auto& v : op->writes) tip += " " + v;
    s += rect(x, top + row_h * row[op->track] + 2, w, row_h - 8, colour(op->name), tip);
  }
  s += text(left, axis_y, "0 ms");
  s += text(left + plot_w - 80, axis_y, fixed(span / 1000, 2) + " ms");
  std::size_t i = 0;
  for (const auto& entry : names) {
    const auto [x, n] = legend_at[i++];
    const double y = axis_y + 8 + 20.0 * n;
    s += rect(x, y, 10, 10, colour(entry.first)) + text(x + 14, y + 9, entry.first);
  }
  return s + "</svg>";
}

}  // namespace depbench
