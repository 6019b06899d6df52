// The public Graph handle and Engine's capture / replay.

#include <sstream>
#include <stdexcept>

#include "depengine/graph.h"
#include "engine/engine_core.h"
#include "engine/graph_data.h"

namespace depengine {

Graph Engine::capture(const std::function<void()>& body) { return Graph(core_->capture(body)); }

void Engine::replay(const Graph& graph, const PushOptions& options) { core_->replay(graph.data(), options); }

Graph::~Graph() { release(); }

Graph& Graph::operator=(Graph&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::move(other.data_);
  }
  return *this;
}

void Graph::release() noexcept {
  if (!data_) return;
  data_->engine->release_graph(*data_);
  data_.reset();
}

namespace {

const detail::GraphData& checked(const std::shared_ptr<detail::GraphData>& data) {
  if (!data) throw std::invalid_argument("depengine: use of an empty graph (moved from, or default-made)");
  return *data;
}

}  // namespace

std::size_t Graph::size() const { return checked(data_).nodes.size(); }

std::size_t Graph::dependencies() const { return checked(data_).edges; }

std::vector<Var> Graph::variables() const {
  std::vector<Var> vars;
  for (const detail::GraphVar& v : checked(data_).vars) {
    if (!v.inside) vars.push_back(v.var);
  }
  return vars;
}

std::vector<Var> Graph::own_variables() const {
  std::vector<Var> vars;
  for (const detail::GraphVar& v : checked(data_).vars) {
    if (v.inside) vars.push_back(v.var);
  }
  return vars;
}

namespace {

std::string dot_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

std::string Graph::to_dot() const {
  const detail::GraphData& g = checked(data_);
  std::ostringstream out;
  out << "digraph graph_capture {\n  node [shape=box];\n";
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const detail::GraphNode& n = g.nodes[i];
    out << "  op" << i << " [label=\"" << i << ": " << (n.name.empty() ? "op" : dot_escape(n.name)) << "\"];\n";
  }
  // Outside variables as ellipses: where a replay meets the rest of the program.
  for (std::size_t k = 0; k < g.vars.size(); ++k) {
    const detail::GraphVar& v = g.vars[k];
    if (v.inside) continue;
    const std::string label = v.state->name.empty() ? "#" + std::to_string(v.var.slot()) : v.state->name;
    out << "  var" << k << " [shape=ellipse, style=dashed, label=\"" << dot_escape(label) << "\"];\n";
  }
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    for (std::uint32_t s : g.nodes[i].successors) out << "  op" << i << " -> op" << s << ";\n";
    for (const detail::GraphAccess& a : g.nodes[i].accesses) {
      if (g.vars[a.var].inside) continue;
      if (a.write) {
        out << "  op" << i << " -> var" << a.var << " [style=dashed];\n";
      } else {
        out << "  var" << a.var << " -> op" << i << " [style=dashed];\n";
      }
    }
  }
  out << "}\n";
  return out.str();
}

}  // namespace depengine
