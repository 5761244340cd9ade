// The one text table of the ebla command: aligned columns (labels left, numbers right), an
// optional row of group labels over consecutive columns, or the same table as Markdown.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace ebla::cli {

class Table {
public:
  /// Labels over consecutive columns: (label, number of columns); "" labels none.
  using Groups = std::vector<std::pair<std::string, std::size_t>>;

  /// `left`: how many leading columns are left-aligned (labels); the rest are right-aligned.
  explicit Table(std::vector<std::string> header, Groups groups = {}, std::size_t left = 1)
      : header_(std::move(header)), groups_(std::move(groups)), left_(left) {}

  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::size_t rows() const { return rows_.size(); }

  /// The table as aligned text, every line prefixed by `indent`, trailing blanks removed.
  void print(const std::string& indent = "") const;
  /// The table in Markdown (a group's label prefixes the headers of its columns).
  void print_markdown() const;

private:
  std::vector<std::size_t> widths() const;
  std::string row_text(const std::vector<std::string>& cells, const std::vector<std::size_t>& w) const;
  std::string groups_text(const std::vector<std::size_t>& w) const;

  std::vector<std::string> header_;
  Groups groups_;
  std::size_t left_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace ebla::cli
