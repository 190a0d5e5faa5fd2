"""Oracle: CPython's own test suite, each test method compiled by bytegraph, against the same tests run plainly.

The installed `test` package lives in the standard library, which the frame hook never compiles; so each
selected module (and the shared helper modules its tests inherit from) is copied to a scratch directory at
run time and imported from there under its usual name. Every module runs twice in its own subprocess:
plainly (torch and bytegraph imported, as in any process using bytegraph), then with each test method wrapped
in `bytegraph.compile(method, backend="eager")` (fullgraph off).
A test that passes plainly and fails compiled is a bytegraph bug.

    python -m tests.oracles.cpython_suite [--modules test_list,test_dict] [--timeout 20] [--json out.json]

Each row shows the module's tests, those passing plainly, those also passing compiled, the regressions,
and the wall seconds of the plain/compiled runs.
"""
from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import unittest

DEFAULT_MODULES = [
    "test_list", "test_dict", "test_set", "test_tuple", "test_bool", "test_int", "test_float", "test_string",
    "test_operator", "test_with", "test_contextlib", "test_exceptions", "test_generators", "test_scope",
    "test_class", "test_collections", "test_functools", "test_itertools", "test_enumerate", "test_sort",
    "test_builtin", "test_patma", "test_unpack", "test_augassign", "test_richcmp", "test_keywordonlyarg",
    "test_raise", "test_iter", "test_listcomps", "test_dictviews", "test_structseq", "test_super",
    "test_compare", "test_unary", "test_slice", "test_range", "test_bisect", "test_heapq", "test_math",
    "test_string_literals", "test_genexps", "test_setcomps", "test_dictcomps", "test_named_expressions",
    "test_opcodes", "test_grammar", "test_typechecks", "test_isinstance", "test_abc", "test_property",
    "test_userdict", "test_userlist", "test_defaultdict", "test_ordered_dict", "test_deque",
    "test_enum", "test_copy", "test_decorators", "test_types", "test_fstring", "test_format", "test_pow",
    "test_long", "test_complex", "test_fractions", "test_call", "test_funcattrs", "test_dynamic", "test_global",
    "test_binop", "test_baseexception", "test_exception_group", "test_exception_variations", "test_index",
    "test_int_literal", "test_userstring", "test_keyword", "test_reprlib", "test_textwrap",
    "test_positional_only_arg", "test_hash", "test_contains", "test_generator_stop", "test_yield_from",
    "test_numeric_tower", "test_abstract_numbers", "test_copyreg", "test_exception_hierarchy", "test_fnmatch",
    "test_shlex", "test_statistics", "test_descr",
    # frames, tracebacks, tracing, introspection and the modules their tests lean on
    "test_frame", "test_traceback", "test_sys_settrace", "test_inspect", "test_module", "test_genericalias",
    "test_warnings", "test_contextlib_async", "test_asyncgen", "test_context", "test_memoryview", "test_weakset",
    "test_print", "test_syntax", "test_peepholer", "test_codeop", "test_doctest", "test_tokenize",
    "test_utf8source", "test_graphlib", "test_pprint", "test_difflib", "test_csv", "test_getopt", "test_urlparse",
    "test_html", "test_htmlparser", "test_minidom", "test_cmath", "test_colorsys", "test_base64", "test_binascii",
    "test_calendar", "test_tomllib", "test_sched", "test_posixpath", "test_glob", "test_timeit", "test_hmac",
    # classes, calls, unpacking, descriptors, attribute caches and dict versions; serialisation
    "test_dataclasses", "test_extcall", "test_unpack_ex", "test_metaclass", "test_genericclass", "test_subclassinit",
    "test_dynamicclassattribute", "test_descrtut", "test_iterlen", "test_except_star", "test_type_annotations",
    "test_pep646_syntax", "test_opcache", "test_dict_version", "test_symtable", "test_json", "test_struct",
    "test_marshal", "test_pickletools", "test_linecache", "test_xdrlib", "test_uu",
    # the library at large: text, codecs, dates, files, archives, serialisation, logging, unittest itself
    "test_typing", "test_weakref", "test_datetime", "test_codecs", "test_unicodedata", "test_uuid", "test_ntpath",
    "test_plistlib", "test_zlib", "test_quopri", "test_gettext", "test_secrets", "test_strtod", "test_pickle",
    "test_unittest", "test_zipfile", "test_wave", "test_getpass", "test_errno", "test_atexit", "test_logging",
    "test_pathlib", "test_time", "test_os", "test_shutil", "test_tempfile", "test_locale", "test_fileinput",
    "test_filecmp", "test_lzma", "test_bz2", "test_gzip", "test_pyexpat", "test_sax", "test_mimetypes",
    "test_shelve", "test_email", "test_sqlite3", "test_fileio", "test_tarfile", "test_mailbox", "test_trace",
    "test_finalization", "test_bufio", "test_univnewlines", "test_stat", "test_genericpath", "test_hashlib",
    "test_http_cookies", "test_http_cookiejar", "test_urllib2", "test_urllib", "test_cmd", "test_code_module",
    "test_pyclbr", "test_pulldom", "test_xml_etree_c", "test_codeccallbacks", "test_charmapcodec",
    "test_multibytecodec", "test_source_encoding", "test_unicode_identifiers", "test_zipimport", "test_pkgutil",
    "test_netrc", "test_mailcap", "test_dbm_dumb", "test_threading_local", "test_zoneinfo", "test_unparse",
    "test_audioop", "test_pwd", "test_grp", "test_resource", "test_signal", "test_selectors", "test_thread",
    "test_threading", "test_ctypes", "test_compileall", "test_py_compile", "test_runpy", "test_site",
    "test_sysconfig", "test_platform", "test_zipapp", "test_dbm", "test_posix", "test_mmap", "test_fcntl",
    "test_pty", "test_largefile", "test_httplib", "test_wsgiref", "test_urllib_response",
    "test_xml_dom_minicompat", "test_webbrowser", "test_openpty", "test_smtplib",
    # frames that break a hundred times; parsers, numbers and addresses
    "test_future_stmt", "test_configparser", "test_optparse", "test_random", "test_ipaddress", "test_bytes",
    "test_unicode", "test_ast", "test_array",
    # debugger, dates, media and archive formats, importing, documentation, sockets and servers
    "test_bdb", "test_strptime", "test_ucn", "test_type_comments", "test_picklebuffer", "test_robotparser",
    "test_rlcompleter", "test_tabnanny", "test_pipes", "test_imghdr", "test_sunau", "test_aifc", "test_cgi",
    "test_file", "test_imp", "test_codecencodings_jp", "test_codecencodings_iso2022", "test_lib2to3", "test_pydoc",
    "test_modulefinder", "test_import", "test_support", "test_xmlrpc", "test_timeout", "test_socketserver",
    "test_unicode_file_functions", "test_asyncore", "test_asynchat", "test_smtpd", "test_ftplib", "test_poplib",
    "test_telnetlib", "test_termios",
    # coroutines, end-of-file and long-expression parsing, packages, doctests, codecs, the type cache
    "test_coroutines", "test_eof", "test_longexp", "test_pkg", "test_doctest2", "test_stringprep", "test_strftime",
    "test_type_cache", "test___all__",
]
# shared base classes some test modules inherit their test methods from: relocated with them
HELPERS = ["seq_tests", "list_tests", "mapping_tests", "string_tests"]


# ---------------------------------------------------------------------------------------------- child side
class _Timeout(BaseException):
    pass


def _on_alarm(signum, frame):
    # a test that set the collector to run at every allocation with a callback (test_generators) gets
    # the timeout inside that callback, where it is swallowed: the collector is put back first
    gc.callbacks.clear()
    gc.set_threshold(700, 10, 10)
    raise _Timeout()


def _disarm():
    """Stop the test's timer (it may fire once more while being stopped)."""
    while True:
        try:
            signal.setitimer(signal.ITIMER_REAL, 0)
            return
        except _Timeout:
            continue


def _relocate(name: str, scratch: str):
    """Import test.<name> from a copy under `scratch` (outside the stdlib, so the hook compiles it).
    A test package (test_json/, test_inspect/) is copied whole; its submodules import from the copy."""
    import importlib.util

    import test
    src = os.path.join(os.path.dirname(test.__file__), name)
    if os.path.isdir(src):
        for stale in [m for m in sys.modules if m.startswith(f"test.{name}.")]:   # (from an earlier copy)
            del sys.modules[stale]
        dst = os.path.join(scratch, name)
        shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__"))
        spec = importlib.util.spec_from_file_location(f"test.{name}", os.path.join(dst, "__init__.py"),
                                                      submodule_search_locations=[dst])
    else:
        dst = os.path.join(scratch, name + ".py")
        shutil.copyfile(src + ".py", dst)
        spec = importlib.util.spec_from_file_location(f"test.{name}", dst)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[f"test.{name}"] = mod
    setattr(test, name, mod)
    spec.loader.exec_module(mod)
    return mod


def _link_test_data(scratch: str) -> None:
    """The test package's data (decimaltestdata/, xmltestdata/, cjkencodings/...) linked beside the copied
    modules: a test that finds it next to its own file (test_decimal's `os.path.dirname(__file__)`) finds it."""
    import test
    home = os.path.dirname(test.__file__)
    for name in os.listdir(home):
        if name.endswith(".py") or name.startswith(("test_", "__")) or name in ("support", "libregrtest"):
            continue
        os.symlink(os.path.join(home, name), os.path.join(scratch, name))


def _load_tests(mod) -> unittest.TestSuite:
    """The module's tests; for a package, its own test classes and those of each `test*` submodule and
    subpackage (its `load_tests` would discover them under the stdlib's folder, not the copy's)."""
    loader = unittest.defaultTestLoader
    if not hasattr(mod, "__path__"):
        return loader.loadTestsFromModule(mod)
    # (only the package's own classes: those it imports from a submodule come with that submodule)
    suite = unittest.TestSuite(loader.loadTestsFromTestCase(obj) for obj in vars(mod).values()
                               if isinstance(obj, type) and issubclass(obj, unittest.TestCase) and
                               obj.__module__ == mod.__name__)
    folder = mod.__path__[0]
    for file in sorted(os.listdir(folder)):
        sub = f"{mod.__name__}.{file.removesuffix('.py')}"
        if file.startswith("test") and file.endswith(".py"):
            try:
                suite.addTests(loader.loadTestsFromModule(importlib.import_module(sub)))
            except unittest.SkipTest:       # a submodule for another platform (test_importlib's test_windows)
                continue
        elif os.path.isfile(os.path.join(folder, file, "__init__.py")) and not file.startswith("__"):
            # a subpackage of tests (test_importlib's source/, import_/): its own test* submodules
            suite.addTests(_load_tests(importlib.import_module(sub)))
    return suite


def _iter_tests(suite):
    for t in suite:
        if isinstance(t, unittest.TestSuite):
            yield from _iter_tests(t)
        else:
            yield t


class _Fixtures:
    """Module and class fixtures (setUpModule, setUpClass, their tearDowns and cleanups) run around the
    tests as a unittest suite runs them: `case.run` alone skips them, and a test needing one (test_xml_etree's
    setUpModule picks the ElementTree it tests) failed in both runs. Each test runs in a one-test suite
    whose result carries over which class and module are set up."""

    def __init__(self):
        self.previous_class, self.module_failed = None, False

    def run(self, case, res: unittest.TestResult) -> None:
        res._testRunEntered = True          # not a top-level run: the suite leaves the class set up
        res._previousTestClass, res._moduleSetUpFailed = self.previous_class, self.module_failed
        try:
            unittest.TestSuite([case]).run(res)
        finally:
            self.previous_class, self.module_failed = res._previousTestClass, res._moduleSetUpFailed

    def finish(self) -> None:
        res = unittest.TestResult()
        res._previousTestClass, res._moduleSetUpFailed = self.previous_class, self.module_failed
        suite = unittest.TestSuite()
        suite._tearDownPreviousClass(None, res)
        suite._handleModuleTearDown(res)


def _compile_test(test_case):
    import bytegraph
    name = getattr(test_case, "_testMethodName", None)
    if not name or not hasattr(test_case, name):
        return   # doctests and other non-method cases run as they are
    method = getattr(test_case, name)
    bytegraph.config.strict = True      # an internal error is a finding, not a silent eager run
    setattr(test_case, name, bytegraph.compile(method, backend="eager"))


def _warm_up():
    """Compile one small function before the first timed test: the lazy imports a first compile triggers
    (torch submodules) must not be cut in half by a test's timeout, leaving a module half-initialised."""
    import torch

    import bytegraph

    def warm(x, items):
        items.append(str(items))          # a graph break
        return torch.relu(x) + len(items)
    bytegraph.compile(warm, backend="eager")(torch.ones(2), [])


def run_tests(module: str, mode: str, timeout: float, write) -> None:
    """Run one module's tests ("plain" or "compiled"), calling `write(record)` after each test, in a
    scratch directory: the files tests make in the current directory (`@test_*_tmp`) go there."""
    cwd = os.getcwd()
    scratch = tempfile.mkdtemp(prefix="bytegraph_cpython_")
    os.chdir(scratch)
    try:
        _run_tests_in(scratch, module, mode, timeout, write)
    finally:
        os.chdir(cwd)
        shutil.rmtree(scratch, ignore_errors=True)


def _run_tests_in(scratch: str, module: str, mode: str, timeout: float, write) -> None:
    import test  # noqa: F401 - the package the relocated modules belong to
    try:
        _link_test_data(scratch)
        for helper in HELPERS:
            _relocate(helper, scratch)
        mod = _relocate(module, scratch)
    except BaseException as e:  # noqa: BLE001 - reported as an import failure of the module
        write({"test": "<import>", "outcome": "error", "detail": repr(e)})
        return
    if mode == "compiled":
        _warm_up()
    else:   # the same libraries loaded as in a bytegraph user's process: only the compiling differs
        import torch  # noqa: F401
        import bytegraph  # noqa: F401
    try:
        suite = _load_tests(mod)
    except BaseException as e:  # noqa: BLE001 - a submodule that fails to import: reported as for the module
        write({"test": "<import>", "outcome": "error", "detail": repr(e)})
        return
    old = signal.signal(signal.SIGALRM, _on_alarm)
    fixtures = _Fixtures()
    for case in _iter_tests(suite):
        if mode == "compiled":
            _compile_test(case)
        res = unittest.TestResult()
        gc_state = gc.get_threshold(), list(gc.callbacks)
        start = time.time()
        # re-raised every second past the timeout: a _Timeout raised inside a gc callback or a __del__
        # is swallowed there ("Exception ignored in ..."), and one such test held a module for 900 s
        signal.setitimer(signal.ITIMER_REAL, timeout, 1.0)
        try:
            fixtures.run(case, res)
            outcome = ("skip" if res.skipped else "fail" if res.failures else "error" if res.errors
                       else "pass" if res.testsRun else "skip")
            detail = ""
            if res.failures or res.errors:
                detail = (res.failures or res.errors)[0][1][-1500:]
        except _Timeout:
            outcome, detail = "timeout", f"> {timeout}s"
        except BaseException:  # noqa: BLE001 - a test that escapes unittest's own handling
            outcome, detail = "error", traceback.format_exc()[-1500:]
        finally:
            _disarm()
            # a test cut short may leave the collector as it set it (threshold 1, a callback that walks
            # the stack): every later test would crawl
            gc.set_threshold(*gc_state[0])
            gc.callbacks[:] = gc_state[1]
        if "_Timeout" in detail:
            outcome = "timeout"
        # (the class's `id`: a test may set an attribute of that name, test__xxsubinterpreters does)
        write({"test": type(case).id(case).split(".", 1)[-1], "outcome": outcome,
               "seconds": round(time.time() - start, 3), "detail": detail})
    signal.setitimer(signal.ITIMER_REAL, timeout, 1.0)
    try:
        fixtures.finish()
    except BaseException:  # noqa: BLE001, S110 - a failing last tearDown changes no test's outcome
        pass
    finally:
        _disarm()
    signal.signal(signal.SIGALRM, old)


def child_main(module: str, mode: str, timeout: float, out_path: str):
    with open(out_path, "w") as results:
        def write(record):
            results.write(json.dumps(record) + "\n")
            results.flush()
        run_tests(module, mode, timeout, write)


# --------------------------------------------------------------------------------------------- parent side
def run_module(module: str, mode: str, timeout: float, module_timeout: float) -> dict:
    """Run one module in a subprocess; returns {test_id: record}. A stuck module is killed and its
    remaining tests counted as a module timeout."""
    fd, out_path = tempfile.mkstemp(suffix=".jsonl")
    os.close(fd)
    cmd = [sys.executable, "-m", "tests.oracles.cpython_suite", "--child", module, mode, str(timeout), out_path]
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    status, start = "ok", time.time()
    try:
        proc = subprocess.run(cmd, cwd=root, timeout=module_timeout, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
        if proc.returncode != 0:
            status = f"exit {proc.returncode}: {proc.stderr[-300:]}"
    except subprocess.TimeoutExpired:
        status = f"module timeout > {module_timeout}s"
    records = {}
    with open(out_path) as f:
        for line in f:
            try:
                r = json.loads(line)
            except json.JSONDecodeError:
                continue
            records[r["test"]] = r
    os.unlink(out_path)
    return {"status": status, "tests": records, "seconds": round(time.time() - start, 1)}


def summary(detail: str) -> str:
    """The line of a traceback that names the exception."""
    lines = [ln for ln in detail.strip().splitlines() if ln and not ln[0].isspace()]
    named = [ln for ln in lines if any(w in ln.split(":")[0] for w in ("Error", "Exception", "Failure", "Exit"))]
    return (named or lines or [""])[-1]


def compare(plain: dict, compiled: dict) -> dict:
    p, c = plain["tests"], compiled["tests"]
    passed_plain = {t for t, r in p.items() if r["outcome"] == "pass"}
    passed_compiled = {t for t, r in c.items() if r["outcome"] == "pass"}
    regressions = sorted(passed_plain - passed_compiled)
    return {
        "tests": len(p), "passed_plain": len(passed_plain), "passed_compiled": len(passed_compiled & passed_plain),
        "plain_status": plain["status"], "compiled_status": compiled["status"],
        "plain_seconds": plain["seconds"], "compiled_seconds": compiled["seconds"],
        "regressions": [{"test": t, "outcome": c.get(t, {}).get("outcome", "not run"),
                         "detail": c.get(t, {}).get("detail", "")} for t in regressions],
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--modules", default=",".join(DEFAULT_MODULES))
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds per test")
    ap.add_argument("--module-timeout", type=float, default=900.0, help="seconds per module and mode")
    ap.add_argument("--json", default="cpython_suite.json")
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        module, mode, timeout, out_path = args.child
        child_main(module, mode, float(timeout), out_path)
        return 0
    report = {}
    header = f"{'module':<24}{'tests':>7}{'plain':>7}{'compiled':>10}{'regressed':>11}{'seconds':>15}  status"
    print(header)
    print("-" * len(header))
    for module in [m for m in args.modules.split(",") if m]:
        plain = run_module(module, "plain", args.timeout, args.module_timeout)
        compiled = run_module(module, "compiled", args.timeout, args.module_timeout)
        row = report[module] = compare(plain, compiled)
        status = "" if row["compiled_status"] == "ok" else row["compiled_status"][:60]
        seconds = f"{row['plain_seconds']:.0f}/{row['compiled_seconds']:.0f}"
        print(f"{module:<24}{row['tests']:>7}{row['passed_plain']:>7}{row['passed_compiled']:>10}"
              f"{len(row['regressions']):>11}{seconds:>15}  {status}", flush=True)
        for r in row["regressions"]:
            print(f"    {r['outcome']:<8} {r['test']}: {summary(r['detail'])[:160]}", flush=True)
        with open(args.json, "w") as f:   # after every module: a long run killed midway keeps its rows
            json.dump({"modules": report}, f, indent=1)
    total = {k: sum(r[k] for r in report.values()) for k in ("tests", "passed_plain", "passed_compiled")}
    total["regressions"] = sum(len(r["regressions"]) for r in report.values())
    print("-" * len(header))
    print(f"{'TOTAL':<24}{total['tests']:>7}{total['passed_plain']:>7}{total['passed_compiled']:>10}"
          f"{total['regressions']:>11}")
    with open(args.json, "w") as f:
        json.dump({"total": total, "modules": report}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
