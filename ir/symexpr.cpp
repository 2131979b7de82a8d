// SymExpr: integer expressions over shape symbols, simplified on construction.
//
// Canonical form (what makes structural equality meaningful):
//   Const    — a folded integer.
//   Add      — at least two terms; no nested Add; like terms combined (s0 + s0 -> 2*s0);
//              terms ordered by their monomial; the constant term, if non-zero, last.
//   Mul      — at least two factors or a coefficient != 1; no nested Mul; the integer
//              coefficient first (when != 1), other factors sorted. A constant times an Add is
//              distributed (2*(s0 + 1) -> 2*s0 + 2).
//   FloorDiv — Python floor division; constants folded, x//1 = x, (k*a + b)//k = a + b//k
//              (so (k*a)//k = a), (x//a)//b = x//(a*b) for positive constants.
//   Mod      — Python modulo; constants folded, x%1 = 0, (k*a + b)%k = b%k.
//   Min/Max  — constants folded, min(x, x) = x, operands sorted with a constant last.
// Printing: "2*s0 + 1", "s0 - 1", "s0//2", "s0%8", "min(s0, 4)".
#include <algorithm>

#include "ir/ir.h"

namespace aotrace::ir {
namespace {

using Kind = SymNode::Kind;

SymExpr make(Kind kind, std::vector<SymExpr> args) {
  auto n = std::make_shared<SymNode>();
  n->kind = kind;
  n->args = std::move(args);
  return SymExpr(std::shared_ptr<const SymNode>(std::move(n)));
}

// Python's floor division and modulo (the divisor is non-zero).
int64_t py_floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
int64_t py_mod(int64_t a, int64_t b) { return a - py_floordiv(a, b) * b; }

// "s2" < "s10": names compared as prefix then trailing number.
int compare_names(const std::string& a, const std::string& b) {
  auto split = [](const std::string& s) {
    size_t p = s.size();
    while (p > 0 && std::isdigit(static_cast<unsigned char>(s[p - 1]))) --p;
    return p;
  };
  size_t pa = split(a), pb = split(b);
  if (pa < a.size() && pb < b.size() && a.compare(0, pa, b, 0, pb) == 0 &&
      a.size() - pa <= 18 && b.size() - pb <= 18) {
    int64_t na = std::stoll(a.substr(pa)), nb = std::stoll(b.substr(pb));
    if (na != nb) return na < nb ? -1 : 1;
  }
  return a.compare(b) < 0 ? -1 : (a == b ? 0 : 1);
}

// A total order on canonical expressions: kind, then contents.
int compare(const SymExpr& x, const SymExpr& y) {
  const SymNode& a = x.node();
  const SymNode& b = y.node();
  if (&a == &b) return 0;
  if (a.kind != b.kind) return a.kind < b.kind ? -1 : 1;
  if (a.kind == Kind::Const) return a.value < b.value ? -1 : (a.value == b.value ? 0 : 1);
  if (a.kind == Kind::Symbol) return compare_names(a.name, b.name);
  size_t n = std::min(a.args.size(), b.args.size());
  for (size_t i = 0; i < n; ++i)
    if (int c = compare(a.args[i], b.args[i])) return c;
  if (a.args.size() != b.args.size()) return a.args.size() < b.args.size() ? -1 : 1;
  return 0;
}

bool less(const SymExpr& x, const SymExpr& y) { return compare(x, y) < 0; }

// A term of a sum as coefficient * monomial (monomial has no integer coefficient).
struct Term {
  int64_t coef;
  SymExpr monomial;
};

Term split_term(const SymExpr& e) {
  const SymNode& n = e.node();
  if (n.kind == Kind::Mul && n.args[0].is_constant()) {
    std::vector<SymExpr> rest(n.args.begin() + 1, n.args.end());
    SymExpr mono = rest.size() == 1 ? rest[0] : make(Kind::Mul, std::move(rest));
    return {n.args[0].constant(), mono};
  }
  return {1, e};
}

SymExpr make_term(int64_t coef, const SymExpr& mono) {
  if (coef == 1) return mono;
  std::vector<SymExpr> args{SymExpr(coef)};
  if (mono.node().kind == Kind::Mul)
    args.insert(args.end(), mono.node().args.begin(), mono.node().args.end());
  else
    args.push_back(mono);
  return make(Kind::Mul, std::move(args));
}

// Builds the canonical sum of `terms` plus `constant`.
SymExpr make_sum(std::vector<Term> terms, int64_t constant) {
  std::stable_sort(terms.begin(), terms.end(),
                   [](const Term& a, const Term& b) { return less(a.monomial, b.monomial); });
  std::vector<SymExpr> args;
  for (size_t i = 0; i < terms.size();) {
    int64_t coef = 0;
    size_t j = i;
    for (; j < terms.size() && compare(terms[j].monomial, terms[i].monomial) == 0; ++j)
      coef += terms[j].coef;
    if (coef != 0) args.push_back(make_term(coef, terms[i].monomial));
    i = j;
  }
  if (constant != 0 || args.empty()) args.push_back(SymExpr(constant));
  if (args.size() == 1) return args[0];
  return make(Kind::Add, std::move(args));
}

void collect_terms(const SymExpr& e, std::vector<Term>& terms, int64_t& constant) {
  const SymNode& n = e.node();
  if (n.kind == Kind::Const) {
    constant += n.value;
  } else if (n.kind == Kind::Add) {
    for (const auto& a : n.args) collect_terms(a, terms, constant);
  } else {
    terms.push_back(split_term(e));
  }
}

// Splits a sum by a non-zero constant k: (k*q_terms + q_const*k) + rest, 0 <= rest const < |k|.
// floordiv and mod use it: (k*a + b)//k = a + b//k and (k*a + b)%k = b%k.
struct Split {
  SymExpr quotient;  // the terms divisible by k, divided by k
  SymExpr rest;      // the other terms plus the constant's remainder
  bool divided;      // any term (or the constant) was divisible
};

Split split_by(const SymExpr& e, int64_t k) {
  std::vector<Term> terms, quotient, rest;
  int64_t constant = 0;
  collect_terms(e, terms, constant);
  for (auto& t : terms) {
    if (t.coef % k == 0) quotient.push_back({t.coef / k, t.monomial});
    else rest.push_back(t);
  }
  int64_t q = py_floordiv(constant, k), r = py_mod(constant, k);
  bool divided = !quotient.empty() || q != 0;
  return {make_sum(std::move(quotient), q), make_sum(std::move(rest), r), divided};
}

std::string paren(const SymExpr& e, bool need) { return need ? "(" + e.str() + ")" : e.str(); }

bool is_kind(const SymExpr& e, std::initializer_list<Kind> kinds) {
  return std::find(kinds.begin(), kinds.end(), e.node().kind) != kinds.end();
}

}  // namespace

SymExpr::SymExpr(int64_t value) {
  auto n = std::make_shared<SymNode>();
  n->kind = Kind::Const;
  n->value = value;
  node_ = std::move(n);
}

SymExpr SymExpr::symbol(std::string name) {
  auto n = std::make_shared<SymNode>();
  n->kind = Kind::Symbol;
  n->name = std::move(name);
  return SymExpr(std::shared_ptr<const SymNode>(std::move(n)));
}

bool SymExpr::is_constant() const { return node_->kind == Kind::Const; }

std::optional<int64_t> SymExpr::as_constant() const {
  if (is_constant()) return node_->value;
  return std::nullopt;
}

int64_t SymExpr::constant() const {
  if (!is_constant()) internal_error("SymExpr::constant() on symbolic " + str());
  return node_->value;
}

std::vector<std::string> SymExpr::symbols() const {
  std::vector<std::string> out;
  std::function<void(const SymExpr&)> walk = [&](const SymExpr& e) {
    if (e.node().kind == Kind::Symbol) out.push_back(e.node().name);
    for (const auto& a : e.node().args) walk(a);
  };
  walk(*this);
  std::sort(out.begin(), out.end(),
            [](const std::string& a, const std::string& b) { return compare_names(a, b) < 0; });
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::optional<int64_t> SymExpr::evaluate(const SymBindings& b) const {
  const SymNode& n = *node_;
  switch (n.kind) {
    case Kind::Const: return n.value;
    case Kind::Symbol: {
      auto it = b.find(n.name);
      if (it == b.end()) return std::nullopt;
      return it->second;
    }
    default: break;
  }
  std::vector<int64_t> v;
  for (const auto& a : n.args) {
    auto x = a.evaluate(b);
    if (!x) return std::nullopt;
    v.push_back(*x);
  }
  int64_t r = v[0];
  switch (n.kind) {
    case Kind::Add: for (size_t i = 1; i < v.size(); ++i) r += v[i]; return r;
    case Kind::Mul: for (size_t i = 1; i < v.size(); ++i) r *= v[i]; return r;
    case Kind::FloorDiv: if (v[1] == 0) return std::nullopt; return py_floordiv(v[0], v[1]);
    case Kind::Mod: if (v[1] == 0) return std::nullopt; return py_mod(v[0], v[1]);
    case Kind::Min: return std::min(v[0], v[1]);
    case Kind::Max: return std::max(v[0], v[1]);
    default: internal_error("SymExpr::evaluate: bad node kind");
  }
}

SymExpr SymExpr::substitute(const std::map<std::string, SymExpr>& m) const {
  const SymNode& n = *node_;
  if (n.kind == Kind::Const) return *this;
  if (n.kind == Kind::Symbol) {
    auto it = m.find(n.name);
    return it == m.end() ? *this : it->second;
  }
  std::vector<SymExpr> a;
  for (const auto& x : n.args) a.push_back(x.substitute(m));
  switch (n.kind) {
    case Kind::Add: { SymExpr r = 0; for (auto& x : a) r = r + x; return r; }
    case Kind::Mul: { SymExpr r = 1; for (auto& x : a) r = r * x; return r; }
    case Kind::FloorDiv: return floordiv(a[0], a[1]);
    case Kind::Mod: return mod(a[0], a[1]);
    case Kind::Min: return min(a[0], a[1]);
    case Kind::Max: return max(a[0], a[1]);
    default: internal_error("SymExpr::substitute: bad node kind");
  }
}

std::string SymExpr::str() const {
  const SymNode& n = *node_;
  switch (n.kind) {
    case Kind::Const: return std::to_string(n.value);
    case Kind::Symbol: return n.name;
    case Kind::Add: {
      std::string s;
      for (size_t i = 0; i < n.args.size(); ++i) {
        Term t = split_term(n.args[i]);
        bool negative = t.coef < 0 || (t.monomial.is_constant() && t.monomial.constant() < 0);
        SymExpr shown = negative ? SymExpr(0) - n.args[i] : n.args[i];
        if (i == 0) s = negative ? "-" + paren(shown, is_kind(shown, {Kind::Add})) : shown.str();
        else s += (negative ? " - " : " + ") + shown.str();
      }
      return s;
    }
    case Kind::Mul: {
      std::string s;
      size_t first = 0;
      if (n.args[0].is_constant() && n.args[0].constant() == -1) { s = "-"; first = 1; }
      for (size_t i = first; i < n.args.size(); ++i) {
        if (i > first) s += "*";
        s += paren(n.args[i], is_kind(n.args[i], {Kind::Add, Kind::FloorDiv, Kind::Mod}));
      }
      return s;
    }
    case Kind::FloorDiv:
    case Kind::Mod: {
      bool left = is_kind(n.args[0], {Kind::Add});
      bool right = is_kind(n.args[1], {Kind::Add, Kind::Mul, Kind::FloorDiv, Kind::Mod});
      return paren(n.args[0], left) + (n.kind == Kind::FloorDiv ? "//" : "%") +
             paren(n.args[1], right);
    }
    case Kind::Min:
    case Kind::Max:
      return std::string(n.kind == Kind::Min ? "min(" : "max(") + n.args[0].str() + ", " +
             n.args[1].str() + ")";
  }
  internal_error("SymExpr::str: bad node kind");
}

SymExpr operator+(const SymExpr& a, const SymExpr& b) {
  if (a.is_constant() && b.is_constant()) return SymExpr(a.constant() + b.constant());
  std::vector<Term> terms;
  int64_t constant = 0;
  collect_terms(a, terms, constant);
  collect_terms(b, terms, constant);
  return make_sum(std::move(terms), constant);
}

SymExpr operator-(const SymExpr& a, const SymExpr& b) { return a + SymExpr(-1) * b; }

SymExpr operator*(const SymExpr& a, const SymExpr& b) {
  int64_t coef = 1;
  std::vector<SymExpr> factors;
  for (const SymExpr* e : {&a, &b}) {
    const SymNode& n = e->node();
    if (n.kind == Kind::Const) {
      coef *= n.value;
    } else if (n.kind == Kind::Mul) {
      for (const auto& f : n.args) {
        if (f.is_constant()) coef *= f.constant();
        else factors.push_back(f);
      }
    } else {
      factors.push_back(*e);
    }
  }
  if (coef == 0 || factors.empty()) return SymExpr(coef);
  if (factors.size() == 1) {
    if (coef == 1) return factors[0];
    if (factors[0].node().kind == Kind::Add) {  // distribute the constant
      std::vector<Term> terms;
      int64_t constant = 0;
      collect_terms(factors[0], terms, constant);
      for (auto& t : terms) t.coef *= coef;
      return make_sum(std::move(terms), constant * coef);
    }
  }
  std::stable_sort(factors.begin(), factors.end(), less);
  SymExpr mono = factors.size() == 1 ? factors[0] : make(Kind::Mul, std::move(factors));
  return make_term(coef, mono);
}

SymExpr floordiv(const SymExpr& a, const SymExpr& b) {
  auto kb = b.as_constant();
  if (kb && *kb != 0) {
    if (auto ka = a.as_constant()) return SymExpr(py_floordiv(*ka, *kb));
    if (*kb == 1) return a;
    Split split = split_by(a, *kb);
    if (split.divided) return split.quotient + floordiv(split.rest, b);
    const SymNode& n = a.node();
    if (*kb > 0 && n.kind == Kind::FloorDiv && n.args[1].is_constant() &&
        n.args[1].constant() > 0)
      return floordiv(n.args[0], n.args[1] * b);
  }
  if (a.is_constant() && a.constant() == 0) return SymExpr(0);
  return make(Kind::FloorDiv, {a, b});
}

SymExpr mod(const SymExpr& a, const SymExpr& b) {
  auto kb = b.as_constant();
  if (kb && *kb != 0) {
    if (auto ka = a.as_constant()) return SymExpr(py_mod(*ka, *kb));
    if (*kb == 1 || *kb == -1) return SymExpr(0);
    Split split = split_by(a, *kb);
    if (split.divided) return mod(split.rest, b);
  }
  if (a.is_constant() && a.constant() == 0) return SymExpr(0);
  return make(Kind::Mod, {a, b});
}

namespace {

// min/max operands in canonical order: symbolic ones sorted, a constant last ("min(s0, 4)").
bool min_max_order(const SymExpr& a, const SymExpr& b) {
  if (a.is_constant() != b.is_constant()) return b.is_constant();
  return less(a, b);
}

}  // namespace

SymExpr min(const SymExpr& a, const SymExpr& b) {
  if (a.is_constant() && b.is_constant()) return SymExpr(std::min(a.constant(), b.constant()));
  if (a == b) return a;
  return min_max_order(a, b) ? make(Kind::Min, {a, b}) : make(Kind::Min, {b, a});
}

SymExpr max(const SymExpr& a, const SymExpr& b) {
  if (a.is_constant() && b.is_constant()) return SymExpr(std::max(a.constant(), b.constant()));
  if (a == b) return a;
  return min_max_order(a, b) ? make(Kind::Max, {a, b}) : make(Kind::Max, {b, a});
}

bool operator==(const SymExpr& a, const SymExpr& b) { return compare(a, b) == 0; }

}  // namespace aotrace::ir

namespace aotrace::ir {

bool in_range(const SymRange& r, int64_t value) {
  return value >= r.min && value <= r.max && (r.multiple_of <= 1 || value % r.multiple_of == 0);
}

std::optional<std::pair<int64_t, int64_t>> sym_bounds(const SymExpr& e, const SymRanges& ranges) {
  using Bounds = std::pair<int64_t, int64_t>;
  constexpr int64_t kHuge = int64_t{1} << 40;  // beyond every real size: arithmetic cannot overflow
  const SymNode& n = e.node();
  auto clamp = [&](Bounds b) -> std::optional<Bounds> {
    if (b.first < -kHuge || b.second > kHuge) return std::nullopt;
    return b;
  };
  switch (n.kind) {
    case SymNode::Kind::Const: return clamp({n.value, n.value});
    case SymNode::Kind::Symbol: {
      auto it = ranges.find(n.name);
      if (it == ranges.end()) return std::nullopt;
      const SymRange& r = it->second;
      int64_t m = std::max<int64_t>(1, r.multiple_of);
      return clamp({(r.min + m - 1) / m * m, r.max / m * m});
    }
    default: break;
  }
  std::vector<Bounds> a;
  for (const SymExpr& x : n.args) {
    auto b = sym_bounds(x, ranges);
    if (!b) return std::nullopt;
    a.push_back(*b);
  }
  Bounds r = a[0];
  switch (n.kind) {
    case SymNode::Kind::Add:
      for (size_t i = 1; i < a.size(); ++i) r = {r.first + a[i].first, r.second + a[i].second};
      return clamp(r);
    case SymNode::Kind::Mul:
      for (size_t i = 1; i < a.size(); ++i) {
        int64_t c[4] = {r.first * a[i].first, r.first * a[i].second, r.second * a[i].first, r.second * a[i].second};
        r = {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
        if (!clamp(r)) return std::nullopt;
      }
      return r;
    case SymNode::Kind::FloorDiv: {
      if (a[1].first != a[1].second || a[1].first <= 0) return std::nullopt;
      int64_t k = a[1].first;
      return Bounds{py_floordiv(r.first, k), py_floordiv(r.second, k)};
    }
    case SymNode::Kind::Mod: {
      if (a[1].first != a[1].second || a[1].first <= 0) return std::nullopt;
      int64_t k = a[1].first;
      if (py_floordiv(r.first, k) == py_floordiv(r.second, k)) return Bounds{py_mod(r.first, k), py_mod(r.second, k)};
      return Bounds{0, k - 1};
    }
    case SymNode::Kind::Min: return Bounds{std::min(r.first, a[1].first), std::min(r.second, a[1].second)};
    case SymNode::Kind::Max: return Bounds{std::max(r.first, a[1].first), std::max(r.second, a[1].second)};
    default: return std::nullopt;
  }
}

}  // namespace aotrace::ir
