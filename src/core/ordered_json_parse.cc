// parse_ordered_json (ordered_json_parse.h): a SAX handler that builds the ordered_json tree itself, with a hash
// index of each open object's keys instead of ordered_map's linear find.
#include "core/ordered_json_parse.h"

#include <fmt/format.h>

#include <cstddef>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace pagoda {
namespace {

using ojson = nlohmann::ordered_json;

class OrderedBuilder final : public nlohmann::json_sax<ojson> {
 public:
  explicit OrderedBuilder(ojson& root) : root_(root) {}

  bool null() override { return put(ojson(nullptr)); }
  bool boolean(bool v) override { return put(ojson(v)); }
  bool number_integer(number_integer_t v) override { return put(ojson(v)); }
  bool number_unsigned(number_unsigned_t v) override { return put(ojson(v)); }
  bool number_float(number_float_t v, const string_t&) override { return put(ojson(v)); }
  bool string(string_t& v) override { return put(ojson(std::move(v))); }
  bool binary(binary_t& v) override { return put(ojson::binary(std::move(v))); }

  bool start_object(std::size_t) override {
    ojson* value = put_container(ojson::object());
    open_.push_back({value, {}, nullptr});
    return true;
  }
  bool key(string_t& k) override {
    Open& o = open_.back();
    auto& members = o.value->get_ref<ojson::object_t&>();
    auto [it, inserted] = o.index.try_emplace(k, members.size());
    if (inserted) {
      members.emplace_back(std::move(k), nullptr);
      o.slot = &members.back().second;
    } else {
      o.slot = &(members.begin() + std::ptrdiff_t(it->second))
                    ->second;  // a duplicate: its value is replaced, its position kept
    }
    return true;
  }
  bool end_object() override {
    open_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override {
    ojson* value = put_container(ojson::array());
    open_.push_back({value, {}, nullptr});
    return true;
  }
  bool end_array() override {
    open_.pop_back();
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    error_ = e.what();
    return false;
  }

  const std::string& error() const { return error_; }

 private:
  struct Open {
    ojson* value;                                   // the object or array being filled
    std::unordered_map<std::string, size_t> index;  // an object's keys -> their positions
    ojson* slot;                                    // an object: where the value after the last key goes
  };

  // Stores a finished scalar where the parse stands. Containers' addresses stay valid while they are open: only
  // the innermost open container grows, and it is never an element of a vector that grows meanwhile.
  bool put(ojson&& v) {
    place(std::move(v));
    return true;
  }
  ojson* put_container(ojson&& v) { return place(std::move(v)); }
  ojson* place(ojson&& v) {
    if (open_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    Open& o = open_.back();
    if (o.value->is_array()) {
      auto& items = o.value->get_ref<ojson::array_t&>();
      items.push_back(std::move(v));
      return &items.back();
    }
    *o.slot = std::move(v);
    return o.slot;
  }

  ojson& root_;
  std::vector<Open> open_;
  std::string error_;
};

}  // namespace

Result<nlohmann::ordered_json> parse_ordered_json(std::string_view text) {
  ojson root;
  OrderedBuilder builder(root);
  if (!ojson::sax_parse(text, &builder)) {
    std::string_view what = builder.error();
    if (const size_t at = what.find("] "); what.starts_with("[json.exception") && at != std::string_view::npos)
      what.remove_prefix(at + 2);
    return make_error(fmt::format("invalid JSON: {}", what), StatusCode::kInvalidArgument);
  }
  return root;
}

}  // namespace pagoda
