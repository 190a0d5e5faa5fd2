// bytegraph._tensor_guards: the C++ fast path for tensor guards (hot path: every guard check
// function with tensor inputs calls it once per call).
//
//   TensorGuards(specs)(t0, t1, ...) -> bool
//   memory_sharing(t0, t1, ...) -> tuple of (int, int)
//
// The tensors must be distinct objects (the graph was traced with them unaliased).
// spec_i = (cls, dtype, device, sizes, strides, requires_grad, dispatch_keys) describes t_i; sizes
// and strides hold None for a dimension that is symbolic (checked by the shape guards instead).
// Reading the tensor's metadata through the C++ API avoids one Python attribute call per field.
#include <torch/csrc/Dtype.h>
#include <torch/extension.h>
#include <ATen/autocast_mode.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

namespace {

struct TensorSpec {
  PyTypeObject* cls;
  at::ScalarType dtype;
  at::Device device;
  std::vector<std::optional<int64_t>> sizes;
  std::vector<std::optional<int64_t>> strides;
  bool requires_grad;
  c10::DispatchKeySet keys;
};

std::vector<std::optional<int64_t>> parse_dims(const py::handle& dims) {
  std::vector<std::optional<int64_t>> out;
  for (const auto& d : py::reinterpret_borrow<py::tuple>(dims)) {
    if (d.is_none()) {
      out.emplace_back(std::nullopt);
    } else {
      out.emplace_back(d.cast<int64_t>());
    }
  }
  return out;
}

template <typename Dims>
bool dims_match(const std::vector<std::optional<int64_t>>& expected, const Dims& actual) {
  if (static_cast<size_t>(actual.size()) != expected.size()) {
    return false;
  }
  for (size_t i = 0; i < expected.size(); i++) {
    if (expected[i].has_value() && *expected[i] != actual[i]) {
      return false;
    }
  }
  return true;
}

class TensorGuards {
 public:
  explicit TensorGuards(const py::tuple& specs) {
    for (const auto& s : specs) {
      auto spec = py::reinterpret_borrow<py::tuple>(s);
      specs_.push_back(TensorSpec{
          reinterpret_cast<PyTypeObject*>(spec[0].ptr()),
          reinterpret_cast<THPDtype*>(spec[1].ptr())->scalar_type,
          spec[2].cast<at::Device>(),
          parse_dims(spec[3]),
          parse_dims(spec[4]),
          spec[5].cast<bool>(),
          c10::DispatchKeySet(c10::DispatchKeySet::RAW, spec[6].cast<uint64_t>())});
    }
  }

  bool check(const py::args& tensors) const {
    if (tensors.size() != specs_.size()) {
      return false;
    }
    // inputs that were distinct tensors when traced must still be distinct (no aliasing)
    for (size_t i = 0; i < tensors.size(); i++) {
      for (size_t j = i + 1; j < tensors.size(); j++) {
        if (tensors[i].ptr() == tensors[j].ptr()) {
          return false;
        }
      }
    }
    for (size_t i = 0; i < specs_.size(); i++) {
      PyObject* obj = tensors[i].ptr();
      const TensorSpec& spec = specs_[i];
      if (Py_TYPE(obj) != spec.cls || !THPVariable_Check(obj)) {
        return false;
      }
      const at::Tensor& t = THPVariable_Unpack(obj);
      if (t.scalar_type() != spec.dtype || t.device() != spec.device || t.requires_grad() != spec.requires_grad ||
          t.key_set() != spec.keys) {
        return false;
      }
      if (!dims_match(spec.sizes, t.sizes()) || !dims_match(spec.strides, t.strides())) {
        return false;
      }
    }
    return true;
  }

 private:
  std::vector<TensorSpec> specs_;
};

// The global state a graph depends on: grad mode, default dtype, deterministic algorithms, and
// autocast (enabled and dtype on every device type, and the cast cache). Checked with one call
// instead of one Python call per setting.
class GlobalStateGuard {
 public:
  GlobalStateGuard(bool grad_enabled, py::handle default_dtype, bool deterministic, const py::tuple& autocast,
                   bool autocast_cache)
      : grad_enabled_(grad_enabled),
        default_dtype_(reinterpret_cast<THPDtype*>(default_dtype.ptr())->scalar_type),
        deterministic_(deterministic),
        autocast_cache_(autocast_cache) {
    // autocast: ((device type name, enabled, dtype), ...)
    for (auto item : autocast) {
      auto entry = item.cast<py::tuple>();
      autocast_.push_back({c10::Device(entry[0].cast<std::string>()).type(), entry[1].cast<bool>(),
                           reinterpret_cast<THPDtype*>(entry[2].ptr())->scalar_type});
    }
  }

  bool check() const {
    if (at::GradMode::is_enabled() != grad_enabled_ ||
        c10::typeMetaToScalarType(at::get_default_dtype()) != default_dtype_ ||
        at::globalContext().deterministicAlgorithms() != deterministic_ ||
        at::autocast::is_autocast_cache_enabled() != autocast_cache_) {
      return false;
    }
    for (const auto& a : autocast_) {
      if (at::autocast::is_autocast_enabled(a.device) != a.enabled ||
          at::autocast::get_autocast_dtype(a.device) != a.dtype) {
        return false;
      }
    }
    return true;
  }

 private:
  struct AutocastState {
    at::DeviceType device;
    bool enabled;
    at::ScalarType dtype;
  };
  bool grad_enabled_;
  at::ScalarType default_dtype_;
  bool deterministic_;
  bool autocast_cache_;
  std::vector<AutocastState> autocast_;
};

// Which tensors share memory, and how: entry i is (g, d), g the smallest index of a tensor whose
// storage's bytes overlap tensor i's (directly or through others), i itself if none, and d the byte
// distance from tensor g's first element to tensor i's. Views of one storage share it; so do distinct
// storages over the same memory (two `torch.from_numpy` of one array). Empty storages and storage-less
// tensors share nothing. With sizes and strides fixed (the tensor guards), the pattern says exactly
// which elements two inputs have in common: a graph that writes into an input is compiled for one.
py::tuple memory_sharing(const py::args& tensors) {
  struct Range {
    uintptr_t begin, end;
    size_t index;
  };
  const size_t n = tensors.size();
  std::vector<Range> ranges;
  for (size_t i = 0; i < n; i++) {
    if (!THPVariable_Check(tensors[i].ptr())) {
      // (the check function tests types first; explaining a miss guard by guard does not)
      throw py::type_error("memory_sharing: argument " + std::to_string(i) + " is not a tensor");
    }
    const at::Tensor& t = THPVariable_Unpack(tensors[i].ptr());
    if (!t.has_storage()) {
      continue;  // a wrapper subclass: no memory of its own
    }
    const auto begin = reinterpret_cast<uintptr_t>(t.storage().data());
    const size_t nbytes = t.storage().nbytes();
    if (begin != 0 && nbytes != 0) {
      ranges.push_back({begin, begin + nbytes, i});
    }
  }
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) { return a.begin < b.begin; });
  std::vector<size_t> group(n);
  for (size_t i = 0; i < n; i++) {
    group[i] = i;
  }
  // a sweep over ranges sorted by start: each run of overlapping ranges is one group
  size_t run_start = 0;
  uintptr_t run_end = 0;
  for (size_t k = 0; k < ranges.size(); k++) {
    if (k == 0 || ranges[k].begin >= run_end) {
      run_start = k;
      run_end = ranges[k].end;
    }
    run_end = std::max(run_end, ranges[k].end);
    if (k + 1 == ranges.size() || ranges[k + 1].begin >= run_end) {
      size_t smallest = n;
      for (size_t j = run_start; j <= k; j++) {
        smallest = std::min(smallest, ranges[j].index);
      }
      for (size_t j = run_start; j <= k; j++) {
        group[ranges[j].index] = smallest;
      }
    }
  }
  py::tuple out(n);
  for (size_t i = 0; i < n; i++) {
    int64_t distance = 0;
    if (group[i] != i) {
      const at::Tensor& t = THPVariable_Unpack(tensors[i].ptr());
      const at::Tensor& first = THPVariable_Unpack(tensors[group[i]].ptr());
      distance = static_cast<int64_t>(reinterpret_cast<uintptr_t>(t.const_data_ptr()) -
                                      reinterpret_cast<uintptr_t>(first.const_data_ptr()));
    }
    out[i] = py::make_tuple(group[i], distance);
  }
  return out;
}

}  // namespace

PYBIND11_MODULE(_tensor_guards, m) {
  m.doc() = "bytegraph's C++ fast path for tensor guards";
  py::class_<TensorGuards>(m, "TensorGuards")
      .def(py::init<const py::tuple&>())
      .def("__call__", &TensorGuards::check);
  py::class_<GlobalStateGuard>(m, "GlobalStateGuard")
      .def(py::init<bool, py::handle, bool, const py::tuple&, bool>())
      .def("__call__", &GlobalStateGuard::check);
  m.def("memory_sharing", &memory_sharing);
}
