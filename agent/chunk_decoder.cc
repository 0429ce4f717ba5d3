#include "agent/chunk_decoder.h"

#include <array>
#include <cstring>
#include <string>

namespace llmcap::agent {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() &&
         (s.front() == ' ' || s.front() == '\t' || s.front() == '\n' || s.front() == '\r'))
    s.remove_prefix(1);
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// Bytes a string may contain as they are: printable ASCII other than '"' and '\\'. Everything
// else takes the slow path (escape, UTF-8 validation, or an error for a control character).
constexpr std::array<bool, 256> kPlainStringByte = [] {
  std::array<bool, 256> t{};
  for (int c = 0x20; c < 0x80; ++c) t[static_cast<std::size_t>(c)] = c != '"' && c != '\\';
  return t;
}();

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// A validating JSON scanner over one chunk (RFC 8259, with the same acceptance as nlohmann's
// strict parser, which the decoder used before: control characters must be escaped, strings
// must be well-formed UTF-8 (RFC 3629 ranges), surrogate escapes must pair, a UTF-8 BOM may open
// the text, nothing but whitespace may follow the value). It allocates nothing except where a
// caller asks for a string's decoded value; skipped containers are walked iteratively, so
// nesting depth costs no stack.
class Scanner {
 public:
  Scanner(const char* begin, const char* end) : p_(begin), end_(end) {}

  bool at_end() const { return p_ == end_; }
  char peek() const { return p_ < end_ ? *p_ : '\0'; }
  void ws() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }
  bool consume(char c) {
    if (p_ < end_ && *p_ == c) {
      ++p_;
      return true;
    }
    return false;
  }
  // A UTF-8 byte order mark at the very start is skipped (nlohmann does); a partial one fails.
  bool skip_bom() {
    if (p_ < end_ && static_cast<unsigned char>(*p_) == 0xEF) {
      if (end_ - p_ < 3 || static_cast<unsigned char>(p_[1]) != 0xBB ||
          static_cast<unsigned char>(p_[2]) != 0xBF)
        return false;
      p_ += 3;
    }
    return true;
  }

  // Reads a string at '"'. `bytes` = its decoded UTF-8 length; when `out` is given the decoded
  // text is appended to it. When the string has no escape, `raw` views it in the input.
  bool string(std::uint32_t& bytes, std::string* out, std::string_view* raw = nullptr) {
    if (!consume('"')) return false;
    const char* start = p_;
    while (p_ < end_ && kPlainStringByte[static_cast<unsigned char>(*p_)]) ++p_;
    if (p_ < end_ && *p_ == '"') {  // fast path: plain ASCII
      const std::string_view v(start, static_cast<std::size_t>(p_ - start));
      ++p_;
      bytes = static_cast<std::uint32_t>(v.size());
      if (out) out->append(v);
      if (raw) *raw = v;
      return true;
    }
    if (raw) *raw = {};
    std::size_t n = static_cast<std::size_t>(p_ - start);
    if (out) out->append(start, n);
    while (p_ < end_) {
      const unsigned char c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        ++p_;
        bytes = static_cast<std::uint32_t>(n);
        return true;
      }
      if (c < 0x20) return false;  // control characters must be escaped
      if (c == '\\') {
        ++p_;
        if (!escape(n, out)) return false;
        continue;
      }
      if (c < 0x80) {
        if (out) out->push_back(static_cast<char>(c));
        ++p_;
        ++n;
        continue;
      }
      const std::size_t len = utf8_sequence();
      if (len == 0) return false;
      if (out) out->append(p_, len);
      p_ += len;
      n += len;
    }
    return false;  // unterminated
  }

  // A number; `integer` says whether nlohmann would read it as an integer (no fraction or
  // exponent, and within int64 for negatives / uint64 otherwise), then `value` is it as int64
  // (an unsigned above INT64_MAX wraps, as nlohmann's get<std::int64_t>() does).
  bool number(bool& integer, std::int64_t& value) {
    const bool negative = consume('-');
    if (p_ >= end_) return false;
    std::uint64_t magnitude = 0;
    bool overflow = false;
    if (*p_ == '0') {
      ++p_;
    } else if (*p_ >= '1' && *p_ <= '9') {
      while (p_ < end_ && *p_ >= '0' && *p_ <= '9') {
        const auto d = static_cast<std::uint64_t>(*p_ - '0');
        if (magnitude > (UINT64_MAX - d) / 10) overflow = true;
        magnitude = magnitude * 10 + d;
        ++p_;
      }
    } else {
      return false;
    }
    bool fraction = false;
    if (consume('.')) {
      fraction = true;
      if (!digits()) return false;
    }
    if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
      fraction = true;
      ++p_;
      if (!consume('+')) consume('-');
      if (!digits()) return false;
    }
    integer = !fraction && !overflow;
    if (integer && negative) {
      if (magnitude > static_cast<std::uint64_t>(INT64_MAX) + 1) {
        integer = false;
      } else {
        value = static_cast<std::int64_t>(0 - magnitude);
      }
    } else if (integer) {
      value = static_cast<std::int64_t>(magnitude);
    }
    return true;
  }

  // Any JSON value, validated and discarded.
  bool skip_value() {
    std::string stack;  // open containers beyond the first (SSO: no allocation below 16 deep)
    for (;;) {
      ws();
      const char c = peek();
      if (c == '{' || c == '[') {
        ++p_;
        ws();
        if (!consume(c == '{' ? '}' : ']')) {  // not empty: read its first element
          stack.push_back(c);
          if (c == '{' && !member_key()) return false;
          continue;
        }
      } else if (!scalar()) {
        return false;
      }
      // After a complete value: close containers or move to the next element.
      for (;;) {
        if (stack.empty()) return true;
        ws();
        const char open = stack.back();
        if (consume(',')) {
          if (open == '{') {
            ws();
            if (!member_key()) return false;
          }
          break;
        }
        if (consume(open == '{' ? '}' : ']')) {
          stack.pop_back();
          continue;
        }
        return false;
      }
    }
  }

  // A key and its ':' inside an object being skipped.
  bool member_key() {
    std::uint32_t n = 0;
    if (!string(n, nullptr)) return false;
    ws();
    return consume(':');
  }

  // Reads an object member's key (decoded) and the ':' after it; `scratch` holds a key that
  // had escapes. Call with the scanner after '{' or ','.
  bool key(std::string_view& k, std::string& scratch) {
    ws();
    std::uint32_t n = 0;
    std::string_view raw;
    if (peek() != '"') return false;
    const char* at = p_;
    if (!string(n, nullptr, &raw)) return false;
    if (raw.data() == nullptr && n > 0) {
      // Escaped key: decode it (rare; real servers never escape their keys).
      const char* after = p_;
      p_ = at;
      scratch.clear();
      if (!string(n, &scratch)) return false;
      p_ = after;
      k = scratch;
    } else {
      k = raw;
    }
    ws();
    if (!consume(':')) return false;
    ws();
    return true;
  }

  // After a member's value: true with `more` set when ',' follows, or at the closing '}' / ']'.
  bool next(char close, bool& more) {
    ws();
    if (consume(',')) {
      more = true;
      return true;
    }
    more = false;
    return consume(close);
  }

 private:
  bool digits() {
    const char* start = p_;
    while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    return p_ > start;
  }

  bool literal(const char* word, std::size_t n) {
    if (static_cast<std::size_t>(end_ - p_) < n || std::memcmp(p_, word, n) != 0) return false;
    p_ += n;
    return true;
  }

  bool scalar() {
    switch (peek()) {
      case '"': {
        std::uint32_t n = 0;
        return string(n, nullptr);
      }
      case 't': return literal("true", 4);
      case 'f': return literal("false", 5);
      case 'n': return literal("null", 4);
      default: {
        bool integer = false;
        std::int64_t v = 0;
        return number(integer, v);
      }
    }
  }

  // Length of the well-formed UTF-8 sequence at p_ (RFC 3629 table 3-7), 0 when ill-formed.
  std::size_t utf8_sequence() const {
    const auto b = [this](std::size_t i) {
      return p_ + i < end_ ? static_cast<unsigned char>(p_[i]) : 0u;
    };
    const unsigned c = b(0);
    const auto in = [](unsigned v, unsigned lo, unsigned hi) { return v >= lo && v <= hi; };
    if (in(c, 0xC2, 0xDF)) return in(b(1), 0x80, 0xBF) ? 2 : 0;
    if (c == 0xE0) return in(b(1), 0xA0, 0xBF) && in(b(2), 0x80, 0xBF) ? 3 : 0;
    if (in(c, 0xE1, 0xEC) || in(c, 0xEE, 0xEF))
      return in(b(1), 0x80, 0xBF) && in(b(2), 0x80, 0xBF) ? 3 : 0;
    if (c == 0xED) return in(b(1), 0x80, 0x9F) && in(b(2), 0x80, 0xBF) ? 3 : 0;
    if (c == 0xF0)
      return in(b(1), 0x90, 0xBF) && in(b(2), 0x80, 0xBF) && in(b(3), 0x80, 0xBF) ? 4 : 0;
    if (in(c, 0xF1, 0xF3))
      return in(b(1), 0x80, 0xBF) && in(b(2), 0x80, 0xBF) && in(b(3), 0x80, 0xBF) ? 4 : 0;
    if (c == 0xF4)
      return in(b(1), 0x80, 0x8F) && in(b(2), 0x80, 0xBF) && in(b(3), 0x80, 0xBF) ? 4 : 0;
    return 0;
  }

  bool hex4(std::uint32_t& v) {
    if (end_ - p_ < 4) return false;
    v = 0;
    for (int i = 0; i < 4; ++i) {
      const int h = hex_value(p_[i]);
      if (h < 0) return false;
      v = (v << 4) | static_cast<std::uint32_t>(h);
    }
    p_ += 4;
    return true;
  }

  // After a '\\': one escape, adding its decoded length to n.
  bool escape(std::size_t& n, std::string* out) {
    if (p_ >= end_) return false;
    const char e = *p_++;
    char simple = 0;
    switch (e) {
      case '"': simple = '"'; break;
      case '\\': simple = '\\'; break;
      case '/': simple = '/'; break;
      case 'b': simple = '\b'; break;
      case 'f': simple = '\f'; break;
      case 'n': simple = '\n'; break;
      case 'r': simple = '\r'; break;
      case 't': simple = '\t'; break;
      case 'u': {
        std::uint32_t cp = 0;
        if (!hex4(cp)) return false;
        if (cp >= 0xDC00 && cp <= 0xDFFF) return false;  // lone low surrogate
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          std::uint32_t low = 0;
          if (!(consume('\\') && consume('u') && hex4(low)) || low < 0xDC00 || low > 0xDFFF)
            return false;
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        }
        n += cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
        if (out) append_utf8(*out, cp);
        return true;
      }
      default: return false;
    }
    ++n;
    if (out) out->push_back(simple);
    return true;
  }

  const char* p_;
  const char* end_;
};

// Walks one chunk and keeps only the fields measurement needs. It answers as a DOM reading
// would (the decoder's old implementation, kept as the reference in chunk_decoder_test): for a
// key given twice in one object the last one wins (each key resets its field before its value
// is read), values of an unexpected type reset the field, fields nested anywhere else are
// ignored, and the elements of `choices` that are not objects are skipped.
class ChunkReader {
 public:
  ChunkReader(Scanner& s, DecodedChunk& out, ApiKind api, bool streaming, bool want_id,
              bool want_content)
      : s_(s),
        out_(out),
        chat_(api != ApiKind::kCompletions),
        holder_(streaming ? "delta" : "message"),
        want_id_(want_id),
        want_content_(want_content) {}

  // At '{' of the root object.
  bool root() {
    return object([this](std::string_view k) {
      if (k == "id") return id();
      if (k == "error") return error();
      if (k == "usage") return usage();
      if (k == "choices") return choices();
      return s_.skip_value();
    });
  }

  std::uint32_t text_bytes() const { return total_bytes_; }
  analysis::FinishReason finish_reason() const { return finish_; }
  // The first choice's answer text (want_content only).
  const std::string& content() const { return content_; }

 private:
  // Iterates the members of the object at '{', calling member(key) with the scanner at the
  // value; member must consume the value.
  template <class Member>
  bool object(Member&& member) {
    if (!s_.consume('{')) return false;
    s_.ws();
    if (s_.consume('}')) return true;
    for (bool more = true; more;) {
      std::string_view k;
      if (!s_.key(k, key_scratch_)) return false;
      // k may view key_scratch_, which a nested object reuses: members compare k before
      // reading their value and never look at it afterwards.
      if (!member(k)) return false;
      if (!s_.next('}', more)) return false;
    }
    return true;
  }

  bool id() {
    out_.id.clear();
    if (s_.peek() != '"') return s_.skip_value();
    std::uint32_t n = 0;
    return s_.string(n, want_id_ ? &out_.id : nullptr);
  }

  bool error() {
    out_.server_error = false;
    out_.server_error_code = 0;
    out_.server_error_message.clear();
    switch (s_.peek()) {
      case 'n': return s_.skip_value();  // "error": null is no error
      case '"': {
        out_.server_error = true;
        std::uint32_t n = 0;
        return s_.string(n, &out_.server_error_message);
      }
      case '{':
        out_.server_error = true;
        return object([this](std::string_view k) {
          if (k == "message") {
            out_.server_error_message.clear();
            if (s_.peek() != '"') return s_.skip_value();
            std::uint32_t n = 0;
            return s_.string(n, &out_.server_error_message);
          }
          if (k == "code") {
            out_.server_error_code = 0;
            std::int64_t v = 0;
            bool integer = false;
            if (!integer_or_skip(integer, v)) return false;
            if (integer) out_.server_error_code = static_cast<int>(v);
            return true;
          }
          return s_.skip_value();
        });
      default: out_.server_error = true; return s_.skip_value();
    }
  }

  bool usage() {
    out_.prompt_tokens = out_.completion_tokens = -1;
    if (s_.peek() != '{') return s_.skip_value();
    return object([this](std::string_view k) {
      std::int32_t* field = k == "prompt_tokens"       ? &out_.prompt_tokens
                            : k == "completion_tokens" ? &out_.completion_tokens
                                                       : nullptr;
      if (field == nullptr) return s_.skip_value();
      *field = -1;
      std::int64_t v = 0;
      bool integer = false;
      if (!integer_or_skip(integer, v)) return false;
      if (integer) *field = static_cast<std::int32_t>(v);
      return true;
    });
  }

  bool choices() {
    total_bytes_ = 0;
    finish_ = analysis::FinishReason::kUnknown;
    content_.clear();
    choice_count_ = 0;
    if (!s_.consume('[')) return s_.skip_value();
    s_.ws();
    if (s_.consume(']')) return true;
    for (bool more = true; more;) {
      s_.ws();
      if (s_.peek() == '{') {
        if (!choice()) return false;
      } else if (!s_.skip_value()) {
        return false;
      }
      if (!s_.next(']', more)) return false;
    }
    return true;
  }

  bool choice() {
    std::uint32_t text = 0, content = 0, reasoning_content = 0, reasoning = 0;
    bool has_finish = false;
    analysis::FinishReason finish = analysis::FinishReason::kUnknown;
    // Only the first choice's answer is kept (a conversation has one reply per turn).
    std::string* keep = want_content_ && choice_count_++ == 0 ? &content_ : nullptr;
    const bool ok = object([&](std::string_view k) {
      if (!chat_ && k == "text") {
        text = 0;
        return string_bytes_or_skip(text, keep);
      }
      if (chat_ && k == holder_) {
        content = reasoning_content = reasoning = 0;
        if (s_.peek() != '{') return s_.skip_value();
        return object([&](std::string_view hk) {
          if (hk == "content") {
            content = 0;
            return string_bytes_or_skip(content, keep);
          }
          if (hk == "reasoning_content") {
            reasoning_content = 0;
            return string_bytes_or_skip(reasoning_content);
          }
          if (hk == "reasoning") {
            reasoning = 0;
            return string_bytes_or_skip(reasoning);
          }
          return s_.skip_value();
        });
      }
      if (k == "finish_reason") {
        has_finish = false;
        if (s_.peek() != '"') return s_.skip_value();
        finish_scratch_.clear();
        std::uint32_t n = 0;
        if (!s_.string(n, &finish_scratch_)) return false;
        has_finish = true;
        finish = analysis::parse_finish_reason(finish_scratch_);
        return true;
      }
      return s_.skip_value();
    });
    if (!ok) return false;
    total_bytes_ += text + content + reasoning_content + reasoning;
    if (has_finish) finish_ = finish;
    return true;
  }

  // keep: the decoded string replaces its content (the last of a repeated key wins).
  bool string_bytes_or_skip(std::uint32_t& bytes, std::string* keep = nullptr) {
    if (keep) keep->clear();
    if (s_.peek() != '"') return s_.skip_value();
    return s_.string(bytes, keep);
  }

  bool integer_or_skip(bool& integer, std::int64_t& v) {
    const char c = s_.peek();
    if (c == '-' || (c >= '0' && c <= '9')) return s_.number(integer, v);
    integer = false;
    return s_.skip_value();
  }

  Scanner& s_;
  DecodedChunk& out_;
  const bool chat_;
  const std::string_view holder_;
  const bool want_id_;
  const bool want_content_;
  std::string content_;
  int choice_count_ = 0;
  std::string key_scratch_;
  std::string finish_scratch_;
  std::uint32_t total_bytes_ = 0;
  analysis::FinishReason finish_ = analysis::FinishReason::kUnknown;
};

}  // namespace

DecodedChunk ChunkDecoder::decode(std::string_view data, ApiKind api, bool streaming, bool want_id,
                                  std::string* content_out) {
  DecodedChunk out;
  const std::string_view trimmed = trim(data);
  if (trimmed == "[DONE]") {
    out.done = true;
    return out;
  }
  Scanner s(trimmed.data(), trimmed.data() + trimmed.size());
  bool parsed = s.skip_bom();
  bool object = false;
  if (parsed) {
    s.ws();
    if (s.peek() == '{') {
      object = true;
      ChunkReader reader(s, out, api, streaming, want_id, content_out != nullptr);
      parsed = reader.root();
      out.text_bytes = reader.text_bytes();
      out.finish_reason = reader.finish_reason();
      s.ws();
      if (content_out && parsed && s.at_end()) content_out->append(reader.content());
    } else {
      parsed = s.skip_value();
    }
    s.ws();
    parsed = parsed && s.at_end();
  }
  if (!parsed || !object) {
    DecodedChunk bad;
    bad.malformed = true;
    bad.malformed_reason = !parsed ? "invalid JSON" : "JSON value is not an object";
    return bad;
  }
  out.is_token = out.text_bytes > 0;
  return out;
}

}  // namespace llmcap::agent
