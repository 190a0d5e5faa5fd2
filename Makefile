# bytegraph: `make demo` and `make test` work on a fresh machine (each installs first when needed).
PY ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
STAMP := $(VENV)/.install-stamp

.PHONY: install test demo bench lint conformance hf-sweep fuzz python-model cpython-tests dynamo-probes opinfo opinfo-metal fake-strictness figures clean

install: $(STAMP)

$(STAMP): pyproject.toml setup.py compiler/_eval_frame.c compiler/_tensor_guards.cpp
	test -x $(VPY) || $(PY) -m venv $(VENV)
	$(VPY) -m pip install --upgrade pip setuptools wheel
	# exactly this version: a looser spec pulls several GB of CUDA packages
	$(VPY) -m pip install torch==2.13.0
	# the C++ guard extension builds against the torch just installed: no build isolation
	$(VPY) -m pip install --no-build-isolation -e '.[test]'
	touch $(STAMP)

test: install
	$(VPY) -m pytest -q tests

# structure figures (issue 15): import circles, function-level imports, longest functions, probes
figures: install
	$(VPY) tools/structure_figures.py

conformance: install
	$(VPY) ../shared/conformance/run.py --impl bytegraph --backend counter --require-capture

hf-sweep: install
	$(VPY) benchmarks/hf_sweep.py

# oracles nobody here wrote (tests/oracles/): a differential fuzzer and CPython's own test suite, compiled
fuzz: install
	$(VPY) -m tests.oracles.fuzz --seeds $(or $(SEEDS),0:500) --json fuzz.json --out-dir fuzz_failures

python-model: install
	$(VPY) -m tests.oracles.python_model --json python_model.json

cpython-tests: install
	$(VPY) -m tests.oracles.cpython_suite --json cpython_suite.json $(if $(MODULES),--modules $(MODULES))

# behaviours PyTorch's dynamo tests rely on, restated as probes: bytegraph and torch.compile side by side
dynamo-probes: install
	$(VPY) -m tests.oracles.dynamo_probes -v --json dynamo_probes.json

# torch's OpInfo database through a backend (BACKEND=inductor|aot_eager|eager, DYNAMIC=1 for symbolic sizes)
opinfo: install
	$(VPY) benchmarks/inductor_opinfo_sweep.py --backend $(or $(BACKEND),inductor) --count 10000 \
		$(if $(DYNAMIC),--dynamic) --json opinfo_$(or $(BACKEND),inductor).json

# calls eager refuses that fake kernels accept, each checked compiled (BACKEND) to raise as in eager
fake-strictness: install
	$(VPY) benchmarks/fake_strictness.py --backend $(or $(BACKEND),inductor) --json fake_strictness.json

# torch's OpInfo samples through the Metal printer, its kernels run on CPU by the emulation (metal_emu.h)
opinfo-metal: install
	$(VPY) benchmarks/inductor_opinfo_sweep.py --codegen metal --start $(or $(START),0) --count $(or $(COUNT),150)

demo: install
	$(VPY) examples/quickstart.py

bench: install
	$(VPY) benchmarks/run.py

lint: install
	$(VPY) -m ruff check compiler frontend guards backends tests examples benchmarks

clean:
	rm -rf build *.egg-info compiler/*.so $(VENV)
