#include "table.hpp"

#include <algorithm>
#include <cstdio>

namespace ebla::cli {

namespace {

void put_line(std::string line) {
  while (!line.empty() && line.back() == ' ') line.pop_back();
  std::printf("%s\n", line.c_str());
}

std::string joined(const std::vector<std::string>& cells, const char* separator) {
  std::string s;
  for (std::size_t c = 0; c < cells.size(); ++c) s += (c == 0 ? "" : separator) + cells[c];
  return s;
}

}  // namespace

std::vector<std::size_t> Table::widths() const {
  std::vector<std::size_t> w(header_.size(), 0);
  for (std::size_t c = 0; c < header_.size(); ++c) {
    w[c] = header_[c].size();
    for (const auto& r : rows_)
      if (c < r.size()) w[c] = std::max(w[c], r[c].size());
  }
  return w;
}

std::string Table::row_text(const std::vector<std::string>& cells, const std::vector<std::size_t>& w) const {
  std::string line;
  for (std::size_t c = 0; c < cells.size() && c < w.size(); ++c) {
    const std::string pad(w[c] - cells[c].size(), ' ');
    line += (c == 0 ? "" : "  ") + (c < left_ ? cells[c] + pad : pad + cells[c]);
  }
  return line;
}

// Each group's label centred in dashes over the columns it spans.
std::string Table::groups_text(const std::vector<std::size_t>& w) const {
  std::string line;
  std::size_t c = 0;
  for (const auto& [label, span] : groups_) {
    std::size_t width = 0;
    for (std::size_t k = c; k < c + span && k < w.size(); ++k) width += w[k] + (k == 0 ? 0 : 2);
    const std::size_t lead = c == 0 ? 0 : 2;  // the separator before the group's first column
    std::string text = label.empty() ? "" : " " + label + " ";
    const char fill = label.empty() ? ' ' : '-';
    if (text.size() > width - lead) text = text.substr(0, width - lead);
    const std::size_t before = (width - lead - text.size()) / 2;
    line += std::string(lead, ' ') + std::string(before, fill) + text +
            std::string(width - lead - text.size() - before, fill);
    c += span;
  }
  return line;
}

void Table::print(const std::string& indent) const {
  const std::vector<std::size_t> w = widths();
  if (!groups_.empty()) put_line(indent + groups_text(w));
  put_line(indent + row_text(header_, w));
  for (const auto& r : rows_) put_line(indent + row_text(r, w));
}

void Table::print_markdown() const {
  std::vector<std::string> header = header_;
  std::size_t c = 0;
  for (const auto& [label, span] : groups_) {  // Markdown has no spanning cells
    for (std::size_t k = c; k < c + span && k < header.size(); ++k)
      if (!label.empty()) header[k] = label + " " + header[k];
    c += span;
  }
  std::printf("| %s |\n|", joined(header, " | ").c_str());
  for (std::size_t k = 0; k < header.size(); ++k) std::printf(k < left_ ? ":---|" : "---:|");
  std::printf("\n");
  for (const auto& r : rows_) std::printf("| %s |\n", joined(r, " | ").c_str());
}

}  // namespace ebla::cli
