/*
 * bytegraph._C: the PEP 523 frame hook (hot path: runs on every Python frame
 * while a callback is set).
 *
 * Per code object, co_extra holds either nothing (not seen yet), Py_None (skip:
 * always run as is) or a list of CacheEntry objects (defined here, used by Python as
 * bytegraph._C.CacheEntry): guard, transformed code, info (for Python only) and owner, a weak
 * reference to the callback of the compile that made the entry (its backend, fullgraph...).
 * Only entries whose owner is the current callback are used (an owner of None: any);
 * run-only mode uses any. A second co_extra slot lists (weakly) the callbacks that reached
 * their cache size limit on this code: on a miss they run the frame eagerly without being called.
 * guard(func, *args) -> bool is called with the
 * frame's function and its arguments; the first entry that accepts runs its
 * transformed code as a new function with the same globals and closure,
 * called with the original arguments (all positional). On a miss the
 * per-thread Python callback decides:
 *     callback(code, func, args_tuple, n_entries) -> CacheEntry | action
 * where action is one of the ints exported as RUN_AS_IS (run the frame as is), SKIP_CODE (also
 * mark the code to be skipped for good), SKIP_UNTIL_RESET (the same, until forget_skips_until_reset)
 * and RUN_EAGERLY (run it as is with the hook off for
 * everything it calls); a CacheEntry (already stored by the callback) runs its transformed code.
 * The callback's and the guards' own frames are never intercepted.
 *
 * The original frame never runs an instruction: its arguments move to the transformed code's
 * frame (call_handing_off releases the hook's references as soon as that frame starts). At a graph
 * break transformed code returns a ResumeCall(fn, args) instead of calling the resume function; the
 * hook that ran the original frame runs the chain (run_chain), handing each resume function its
 * arguments the same way, so the resumed frame alone holds the values, as the original frame held
 * its locals, and the C stack does not grow with the breaks executed.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define Py_BUILD_CORE
#include <internal/pycore_frame.h>
#undef Py_BUILD_CORE
#include <structmember.h>

/* What the callback may answer instead of a cache entry (bytegraph.cache.FrameAction). */
enum { RUN_AS_IS = 0, SKIP_CODE = 1, RUN_EAGERLY = 2, SKIP_UNTIL_RESET = 3 };

/* ---- CacheEntry ---------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *guard;   /* guard(func, *args) -> bool */
    PyObject *code;    /* the transformed code object */
    PyObject *info;    /* anything: for Python's use (the check function, the graph...) */
    PyObject *owner;   /* weak reference to the callback that compiled it, or None: any */
} CacheEntry;

static PyObject *entry_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"guard", "code", "info", "owner", NULL};
    PyObject *guard, *code, *info = Py_None, *owner = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO!|OO:CacheEntry", kwlist, &guard, &PyCode_Type, &code,
                                     &info, &owner)) {
        return NULL;
    }
    if (!PyCallable_Check(guard)) {
        PyErr_SetString(PyExc_TypeError, "CacheEntry guard must be callable");
        return NULL;
    }
    CacheEntry *self = (CacheEntry *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->guard = Py_NewRef(guard);
    self->code = Py_NewRef(code);
    self->info = Py_NewRef(info);
    self->owner = Py_NewRef(owner);
    return (PyObject *)self;
}

static int entry_traverse(CacheEntry *self, visitproc visit, void *arg) {
    Py_VISIT(self->guard);
    Py_VISIT(self->code);
    Py_VISIT(self->info);
    Py_VISIT(self->owner);
    return 0;
}

static int entry_clear(CacheEntry *self) {
    Py_CLEAR(self->guard);
    Py_CLEAR(self->code);
    Py_CLEAR(self->info);
    Py_CLEAR(self->owner);
    return 0;
}

static void entry_dealloc(CacheEntry *self) {
    PyObject_GC_UnTrack(self);
    entry_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *entry_repr(CacheEntry *self) {
    PyObject *name = self->code ? ((PyCodeObject *)self->code)->co_name : NULL;
    return PyUnicode_FromFormat("CacheEntry(code=%R)", name ? name : Py_None);
}

static PyMemberDef entry_members[] = {
    {"guard", T_OBJECT, offsetof(CacheEntry, guard), READONLY, "guard(func, *args) -> bool"},
    {"code", T_OBJECT, offsetof(CacheEntry, code), READONLY, "the transformed code object"},
    {"info", T_OBJECT, offsetof(CacheEntry, info), READONLY, "what Python keeps with the entry"},
    {"owner", T_OBJECT, offsetof(CacheEntry, owner), READONLY,
     "weak reference to the callback that compiled the entry (None: any callback)"},
    {NULL},
};

static PyTypeObject CacheEntryType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bytegraph._C.CacheEntry",
    .tp_doc = "CacheEntry(guard, code, info=None, owner=None): one compiled version of a code object.",
    .tp_basicsize = sizeof(CacheEntry),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = entry_new,
    .tp_dealloc = (destructor)entry_dealloc,
    .tp_traverse = (traverseproc)entry_traverse,
    .tp_clear = (inquiry)entry_clear,
    .tp_repr = (reprfunc)entry_repr,
    .tp_members = entry_members,
};

static int is_entry(PyObject *obj) { return Py_IS_TYPE(obj, &CacheEntryType); }

/* ---- ResumeCall ----------------------------------------------------------- */

/* What transformed code returns at a graph break: "call fn(*args) next". The hook that ran the
   original frame's transformed code runs the chain (`run_chain`), handing each call's arguments to
   the resume function's frame, so the Python stack does not grow with the breaks executed and
   nothing but the resumed frame keeps the frame's values alive. A ResumeCall never reaches user
   code: resume functions are only called by the chain. */
typedef struct {
    PyObject_HEAD
    PyObject *fn;      /* the resume function */
    PyObject *args;    /* a tuple: its arguments */
} ResumeCall;

static PyObject *resume_call_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyObject *fn, *call_args;
    if (!_PyArg_NoKeywords("ResumeCall", kwargs) ||
        !PyArg_ParseTuple(args, "OO!:ResumeCall", &fn, &PyTuple_Type, &call_args)) {
        return NULL;
    }
    ResumeCall *self = (ResumeCall *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->fn = Py_NewRef(fn);
    self->args = Py_NewRef(call_args);
    return (PyObject *)self;
}

static int resume_call_traverse(ResumeCall *self, visitproc visit, void *arg) {
    Py_VISIT(self->fn);
    Py_VISIT(self->args);
    return 0;
}

static int resume_call_clear(ResumeCall *self) {
    Py_CLEAR(self->fn);
    Py_CLEAR(self->args);
    return 0;
}

static void resume_call_dealloc(ResumeCall *self) {
    PyObject_GC_UnTrack(self);
    resume_call_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef resume_call_members[] = {
    {"fn", T_OBJECT, offsetof(ResumeCall, fn), READONLY, "the resume function to call next"},
    {"args", T_OBJECT, offsetof(ResumeCall, args), READONLY, "its arguments (a tuple)"},
    {NULL},
};

static PyTypeObject ResumeCallType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bytegraph._C.ResumeCall",
    .tp_doc = "ResumeCall(fn, args): what transformed code returns at a graph break (call fn(*args) next).",
    .tp_basicsize = sizeof(ResumeCall),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = resume_call_new,
    .tp_dealloc = (destructor)resume_call_dealloc,
    .tp_traverse = (traverseproc)resume_call_traverse,
    .tp_clear = (inquiry)resume_call_clear,
    .tp_members = resume_call_members,
};

static Py_ssize_t extra_index = -1;
static Py_ssize_t limit_index = -1;
static _PyFrameEvalFunction previous_eval = NULL;
static int hook_installed = 0;

/* Per thread: NULL = off, Py_False = run only (cache, never compile), else a callable. */
static __thread PyObject *tl_callback = NULL;
/* Per thread: non-zero while bytegraph's own Python code runs (callback, guards). */
static __thread int tl_busy = 0;

#define MAX_STACK_ARGS 32

static void free_extra(void *p) { Py_XDECREF((PyObject *)p); }

static PyObject *get_slot(PyCodeObject *code, Py_ssize_t index) {
    void *extra = NULL;
    _PyCode_GetExtra((PyObject *)code, index, &extra);
    return (PyObject *)extra;
}

static int set_slot(PyCodeObject *code, Py_ssize_t index, PyObject *value) {
    Py_XINCREF(value);
    /* the old value is released through free_extra */
    return _PyCode_SetExtra((PyObject *)code, index, value);
}

/* A SKIP_UNTIL_RESET mark is the reset generation it was made in (an int: stored without making an
   object the collector tracks, and without a record in Python, so a frame with nothing to compile
   leaves no trace); forget_skips_until_reset() starts a new generation, which makes older marks
   read as nothing stored. */
static long skip_generation = 0;

static PyObject *get_extra(PyCodeObject *code) {
    PyObject *extra = get_slot(code, extra_index);
    if (extra != NULL && PyLong_CheckExact(extra)) {
        return PyLong_AsLong(extra) == skip_generation ? Py_None : NULL;
    }
    return extra;
}
static int set_extra(PyCodeObject *code, PyObject *value) { return set_slot(code, extra_index, value); }

static int mark_skip_until_reset(PyCodeObject *code) {
    PyObject *mark = PyLong_FromLong(skip_generation);
    if (mark == NULL) {
        return -1;
    }
    int rc = set_extra(code, mark);
    Py_DECREF(mark);
    return rc;
}

/* The object a weak reference points to (borrowed; Py_None once dead), or the object itself. */
static PyObject *deref(PyObject *ref) {
    return PyWeakref_Check(ref) ? PyWeakref_GET_OBJECT(ref) : ref;
}

/* Whether `callback` reached its cache size limit on `code`. */
static int limit_reached(PyCodeObject *code, PyObject *callback) {
    PyObject *owners = get_slot(code, limit_index);
    if (owners == NULL) {
        return 0;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(owners); i++) {
        if (deref(PyList_GET_ITEM(owners, i)) == callback) {
            return 1;
        }
    }
    return 0;
}

/* Run the frame as is, with the hook off for everything it calls. */
static PyObject *run_eagerly(PyThreadState *ts, _PyInterpreterFrame *frame, int throwflag);

/* Per thread: the frame run_previous hands to the previous hook. A hook installed after bytegraph's
   (torch.compile's, which torch.cond calls eagerly) may hand it back to bytegraph as its own previous
   hook: each passing it to the other never ran it (the calls are tail calls: a silent endless loop). */
static __thread _PyInterpreterFrame *tl_handed_on = NULL;

static PyObject *run_previous(PyThreadState *ts, _PyInterpreterFrame *f, int throwflag) {
    if (previous_eval != NULL && f != tl_handed_on) {
        _PyInterpreterFrame *saved = tl_handed_on;
        tl_handed_on = f;
        PyObject *result = previous_eval(ts, f, throwflag);
        tl_handed_on = saved;
        return result;
    }
    return _PyEval_EvalFrameDefault(ts, f, throwflag);
}

static Py_ssize_t frame_nargs(PyCodeObject *code) {
    return code->co_argcount + code->co_kwonlyargcount +
           ((code->co_flags & CO_VARARGS) ? 1 : 0) +
           ((code->co_flags & CO_VARKEYWORDS) ? 1 : 0);
}

/* Per thread: a call whose arguments move into the frame it starts (see call_handing_off). */
static __thread PyObject *tl_handoff_fn = NULL;
static __thread PyObject **tl_handoff_argv = NULL;
static __thread Py_ssize_t tl_handoff_n = 0;
static __thread int tl_handoff_chain = 0;

static void release_handoff(void) {
    PyObject **argv = tl_handoff_argv;
    Py_ssize_t n = tl_handoff_n;
    tl_handoff_fn = NULL;
    tl_handoff_argv = NULL;
    tl_handoff_n = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_CLEAR(argv[i]);
    }
}

/* Call `fn` (a Python function) with `argv`: references the caller owns and gives up. They are
   released as soon as fn's frame holds its own (the hook sees that frame start, before it runs a
   single instruction), so during the call only that frame keeps the values alive, as it is when
   CPython calls one Python function from another: `x = None` or `del x` in the callee frees x.
   `chain`: fn is a resume function called by `run_chain` (its ResumeCall goes back to the chain). */
static PyObject *call_handing_off(PyObject *fn, PyObject **argv, Py_ssize_t n, int chain) {
    tl_handoff_fn = fn;
    tl_handoff_argv = argv;
    tl_handoff_n = n;
    tl_handoff_chain = chain;
    PyObject *result = PyObject_Vectorcall(fn, argv, n, NULL);
    if (tl_handoff_argv == argv) {
        release_handoff();   /* fn's frame never started (a bad call) or another hook ran it */
    }
    return result;
}

/* Run the resume functions that transformed code hands back (ResumeCall), one after the other. */
static PyObject *run_chain(PyObject *result) {
    while (result != NULL && Py_IS_TYPE(result, &ResumeCallType)) {
        ResumeCall *call = (ResumeCall *)result;
        PyObject *fn = Py_NewRef(call->fn), *args = Py_NewRef(call->args);
        Py_DECREF(result);
        Py_ssize_t n = PyTuple_GET_SIZE(args);
        PyObject *stack_args[MAX_STACK_ARGS];
        PyObject **argv = stack_args;
        if (n > MAX_STACK_ARGS) {
            argv = PyMem_Malloc(sizeof(PyObject *) * n);
            if (argv == NULL) {
                Py_DECREF(fn);
                Py_DECREF(args);
                return PyErr_NoMemory();
            }
        }
        /* the tuple's references move to argv when nothing else holds the tuple */
        int sole = Py_REFCNT(args) == 1;
        for (Py_ssize_t i = 0; i < n; i++) {
            argv[i] = sole ? PyTuple_GET_ITEM(args, i) : Py_NewRef(PyTuple_GET_ITEM(args, i));
            if (sole) {
                PyTuple_SET_ITEM(args, i, NULL);
            }
        }
        Py_DECREF(args);
        result = call_handing_off(fn, argv, n, 1);
        if (argv != stack_args) {
            PyMem_Free(argv);
        }
        Py_DECREF(fn);
    }
    return result;
}

/* Run transformed code as a fresh function with the frame's globals and closure. The frame's
   arguments move to the new frame (the original frame never runs an instruction). Unless the frame
   is itself a step of a chain, the resume functions its code hands back run here. */
static PyObject *run_transformed(_PyInterpreterFrame *frame, CacheEntry *entry, Py_ssize_t nargs, int chain_step) {
    PyObject *code = entry->code;
    PyFunctionObject *orig = frame->f_func;
    PyObject *fn = PyFunction_NewWithQualName(code, orig->func_globals, orig->func_qualname);
    if (fn == NULL) {
        return NULL;
    }
    if (orig->func_closure != NULL && PyFunction_SetClosure(fn, orig->func_closure) < 0) {
        Py_DECREF(fn);
        return NULL;
    }
    PyObject *result = call_handing_off(fn, frame->localsplus, nargs, 0);
    Py_DECREF(fn);
    return chain_step ? result : run_chain(result);
}

/* Returns 1 if the guard accepts, 0 if not, -1 on error. */
static int call_guard(PyObject *guard, _PyInterpreterFrame *frame, Py_ssize_t nargs) {
    PyObject *stack_args[MAX_STACK_ARGS + 1];
    PyObject **argv = stack_args;
    if (nargs + 1 > MAX_STACK_ARGS) {
        argv = PyMem_Malloc(sizeof(PyObject *) * (nargs + 1));
        if (argv == NULL) {
            PyErr_NoMemory();
            return -1;
        }
    }
    argv[0] = (PyObject *)frame->f_func;
    for (Py_ssize_t i = 0; i < nargs; i++) {
        argv[i + 1] = frame->localsplus[i];
    }
    tl_busy = 1;
    PyObject *r = PyObject_Vectorcall(guard, argv, nargs + 1, NULL);
    tl_busy = 0;
    if (argv != stack_args) {
        PyMem_Free(argv);
    }
    if (r == NULL) {
        return -1;
    }
    int ok = (r == Py_True) ? 1 : PyObject_IsTrue(r);
    Py_DECREF(r);
    return ok;
}

/* The guards or the callback hit the recursion limit: their own frames sit on top of a program
   whose stack is already deep. The error is bytegraph's, not the program's (its traceback would
   show bytegraph's frames): it is dropped and the frame runs as written, reaching the limit (or
   not) where eager would. */
static int stack_too_deep_for_bytegraph(void) {
    if (PyErr_ExceptionMatches(PyExc_RecursionError)) {
        PyErr_Clear();
        return 1;
    }
    return 0;
}

static PyObject *bytegraph_eval_frame(PyThreadState *ts, _PyInterpreterFrame *frame, int throwflag) {
    if (frame == tl_handed_on) {
        return _PyEval_EvalFrameDefault(ts, frame, throwflag);   /* handed back: see run_previous */
    }
    PyObject *callback = tl_callback;
    PyCodeObject *code = frame->f_code;
    int chain_step = 0;
    if (tl_handoff_fn != NULL && (PyObject *)frame->f_func == tl_handoff_fn) {
        chain_step = tl_handoff_chain;
        release_handoff();   /* the frame holds its arguments now */
    }
    /* under a trace function (sys.settrace: a debugger, coverage) frames run as written: the program
       sees their line events, which transformed code would not give */
    if (callback == NULL || tl_busy || throwflag || ts->c_tracefunc != NULL || frame->owner != FRAME_OWNED_BY_THREAD ||
        frame->f_func == NULL || !(code->co_flags & CO_OPTIMIZED) ||
        (code->co_flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR | CO_ITERABLE_COROUTINE)) ||
        frame->prev_instr != _PyCode_CODE(code) - 1) {
        return run_previous(ts, frame, throwflag);
    }
    PyObject *extra = get_extra(code);
    if (extra == Py_None) {
        return run_previous(ts, frame, throwflag);
    }
    Py_ssize_t nargs = frame_nargs(code);
    Py_ssize_t n_entries = 0;
    if (extra != NULL) {
        Py_INCREF(extra);  /* a guard may reset the cache under us */
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(extra); i++) {
            PyObject *item = PyList_GET_ITEM(extra, i);
            if (!is_entry(item)) {
                PyErr_Format(PyExc_TypeError, "bytegraph cache holds a %.100s, not a CacheEntry", Py_TYPE(item)->tp_name);
                Py_DECREF(extra);
                return NULL;
            }
            CacheEntry *entry = (CacheEntry *)item;
            /* an entry belongs to the callback that compiled it (its backend, fullgraph...);
               run-only mode uses any */
            if (callback != Py_False && entry->owner != Py_None && deref(entry->owner) != callback) {
                continue;
            }
            n_entries++;
            Py_INCREF(entry);
            int ok = call_guard(entry->guard, frame, nargs);
            if (ok < 0) {
                Py_DECREF(entry);
                Py_DECREF(extra);
                return stack_too_deep_for_bytegraph() ? run_previous(ts, frame, throwflag) : NULL;
            }
            if (ok) {
                PyObject *result = run_transformed(frame, entry, nargs, chain_step);
                Py_DECREF(entry);
                Py_DECREF(extra);
                return result;
            }
            Py_DECREF(entry);
        }
        Py_DECREF(extra);
    }
    if (callback == Py_False) {
        return run_previous(ts, frame, throwflag);
    }
    if (n_entries && limit_reached(code, callback)) {
        return run_eagerly(ts, frame, throwflag);
    }
    PyObject *args = PyTuple_New(nargs);
    if (args == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < nargs; i++) {
        PyObject *v = frame->localsplus[i];
        if (v == NULL) {
            v = Py_None;  /* cannot happen at frame start; be defensive */
        }
        Py_INCREF(v);
        PyTuple_SET_ITEM(args, i, v);
    }
    Py_INCREF(callback);
    tl_busy = 1;
    PyObject *decision = PyObject_CallFunction(callback, "OOOn", (PyObject *)code,
                                               (PyObject *)frame->f_func, args, n_entries);
    tl_busy = 0;
    Py_DECREF(callback);
    Py_DECREF(args);
    if (decision == NULL) {
        return stack_too_deep_for_bytegraph() ? run_previous(ts, frame, throwflag) : NULL;
    }
    if (is_entry(decision)) {
        PyObject *result = run_transformed(frame, (CacheEntry *)decision, nargs, chain_step);
        Py_DECREF(decision);
        return result;
    }
    long action = PyLong_Check(decision) ? PyLong_AsLong(decision) : -1;
    Py_DECREF(decision);
    switch (action) {
    case RUN_AS_IS:
        return run_previous(ts, frame, throwflag);
    case SKIP_CODE:
        if (set_extra(code, Py_None) < 0) {
            return NULL;
        }
        return run_previous(ts, frame, throwflag);
    case SKIP_UNTIL_RESET:
        if (mark_skip_until_reset(code) < 0) {
            return NULL;
        }
        return run_previous(ts, frame, throwflag);
    case RUN_EAGERLY:
        /* this call with the frames it calls (e.g. past the cache size limit) */
        return run_eagerly(ts, frame, throwflag);
    default:
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_TypeError, "bytegraph callback must return a CacheEntry or a FrameAction");
        }
        return NULL;
    }
}

static PyObject *run_eagerly(PyThreadState *ts, _PyInterpreterFrame *frame, int throwflag) {
    PyObject *saved = tl_callback;
    tl_callback = NULL;
    PyObject *result = run_previous(ts, frame, throwflag);
    tl_callback = saved;
    return result;
}

static void install_hook(void) {
    if (hook_installed) {
        return;
    }
    PyInterpreterState *interp = PyThreadState_GET()->interp;
    _PyFrameEvalFunction current = _PyInterpreterState_GetEvalFrameFunc(interp);
    previous_eval = (current == _PyEval_EvalFrameDefault) ? NULL : current;
    _PyInterpreterState_SetEvalFrameFunc(interp, bytegraph_eval_frame);
    hook_installed = 1;
}

/* ---- Python API -------------------------------------------------------- */

static PyObject *py_set_callback(PyObject *self, PyObject *cb) {
    PyObject *old = tl_callback;
    if (cb == Py_None) {
        tl_callback = NULL;
    } else {
        if (cb != Py_False && !PyCallable_Check(cb)) {
            PyErr_SetString(PyExc_TypeError, "callback must be callable, False or None");
            return NULL;
        }
        install_hook();
        Py_INCREF(cb);
        tl_callback = cb;
    }
    if (old == NULL) {
        Py_RETURN_NONE;
    }
    return old; /* the reference held by tl_callback moves to the caller */
}

static PyObject *py_get_callback(PyObject *self, PyObject *unused) {
    PyObject *cb = tl_callback ? tl_callback : Py_None;
    Py_INCREF(cb);
    return cb;
}

static int check_code(PyObject *code) {
    if (!PyCode_Check(code)) {
        PyErr_SetString(PyExc_TypeError, "expected a code object");
        return -1;
    }
    return 0;
}

/* The cache list of a code object, created if absent; None if the code is skipped. */
static PyObject *py_get_cache(PyObject *self, PyObject *code) {
    if (check_code(code) < 0) {
        return NULL;
    }
    PyObject *extra = get_extra((PyCodeObject *)code);
    if (extra == NULL) {
        PyObject *lst = PyList_New(0);
        if (lst == NULL || set_extra((PyCodeObject *)code, lst) < 0) {
            Py_XDECREF(lst);
            return NULL;
        }
        Py_DECREF(lst);
        extra = lst;
    }
    Py_INCREF(extra);
    return extra;
}

static PyObject *py_peek_cache(PyObject *self, PyObject *code) {
    if (check_code(code) < 0) {
        return NULL;
    }
    PyObject *extra = get_extra((PyCodeObject *)code);
    if (extra == NULL) {
        Py_RETURN_NONE;
    }
    Py_INCREF(extra);
    return extra;
}

static PyObject *py_mark_skip(PyObject *self, PyObject *code) {
    if (check_code(code) < 0 || set_extra((PyCodeObject *)code, Py_None) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *py_clear(PyObject *self, PyObject *code) {
    if (check_code(code) < 0 || _PyCode_SetExtra(code, extra_index, NULL) < 0 ||
        _PyCode_SetExtra(code, limit_index, NULL) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* mark_limit(code, owner_ref): on a miss, the owner's frames of `code` run eagerly without the callback. */
static PyObject *py_mark_limit(PyObject *self, PyObject *args) {
    PyObject *code, *owner_ref;
    if (!PyArg_ParseTuple(args, "OO", &code, &owner_ref) || check_code(code) < 0) {
        return NULL;
    }
    PyObject *owners = get_slot((PyCodeObject *)code, limit_index);
    if (owners == NULL) {
        owners = PyList_New(0);
        if (owners == NULL || set_slot((PyCodeObject *)code, limit_index, owners) < 0) {
            Py_XDECREF(owners);
            return NULL;
        }
        Py_DECREF(owners);
    }
    if (PyList_Append(owners, owner_ref) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* type_lookup(cls, name): the interpreter's own class lookup of `name` (no descriptor called, no
   user code run), made where the program's read was traced: it gives the class, when an attribute
   set on it had reset its version tag, a new one, as the read did in eager (a program sees the tag
   through the C API). */
static PyObject *py_type_lookup(PyObject *self, PyObject *args) {
    PyObject *cls, *name;
    if (!PyArg_ParseTuple(args, "O!U", &PyType_Type, &cls, &name)) {
        return NULL;
    }
    _PyType_Lookup((PyTypeObject *)cls, name);
    Py_RETURN_NONE;
}

static PyObject *py_forget_skips_until_reset(PyObject *self, PyObject *unused) {
    skip_generation++;
    Py_RETURN_NONE;
}

static PyObject *py_is_skipped(PyObject *self, PyObject *code) {
    if (check_code(code) < 0) {
        return NULL;
    }
    return PyBool_FromLong(get_extra((PyCodeObject *)code) == Py_None);
}

static PyMethodDef methods[] = {

    {"set_callback", py_set_callback, METH_O, "Set this thread's frame callback; returns the previous one."},
    {"get_callback", py_get_callback, METH_NOARGS, "This thread's frame callback (None = off)."},
    {"get_cache", py_get_cache, METH_O, "The cache-entry list of a code object (created if absent), or None if skipped."},
    {"peek_cache", py_peek_cache, METH_O, "Like get_cache but never creates: None if absent or skipped."},
    {"mark_skip", py_mark_skip, METH_O, "Always run this code object as is."},
    {"clear", py_clear, METH_O, "Forget everything stored on a code object."},
    {"is_skipped", py_is_skipped, METH_O, "Whether a code object is marked to run as is."},
    {"type_lookup", py_type_lookup, METH_VARARGS, "type_lookup(cls, name): the interpreter's class lookup."},
    {"forget_skips_until_reset", py_forget_skips_until_reset, METH_NOARGS,
     "Drop every SKIP_UNTIL_RESET mark (without finding the code objects that hold one)."},
    {"mark_limit", py_mark_limit, METH_VARARGS, "mark_limit(code, owner_ref): the owner reached its cache size limit."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "bytegraph._C", NULL, -1, methods};

PyMODINIT_FUNC PyInit__C(void) {
    if (extra_index < 0) {
        extra_index = _PyEval_RequestCodeExtraIndex(free_extra);
        limit_index = _PyEval_RequestCodeExtraIndex(free_extra);
        if (extra_index < 0 || limit_index < 0) {
            PyErr_SetString(PyExc_RuntimeError, "bytegraph: no co_extra slot available");
            return NULL;
        }
    }
    if (PyType_Ready(&CacheEntryType) < 0 || PyType_Ready(&ResumeCallType) < 0) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&module);
    if (m == NULL || PyModule_AddType(m, &CacheEntryType) < 0 ||
        PyModule_AddType(m, &ResumeCallType) < 0 || PyModule_AddIntConstant(m, "RUN_AS_IS", RUN_AS_IS) < 0 ||
        PyModule_AddIntConstant(m, "SKIP_CODE", SKIP_CODE) < 0 || PyModule_AddIntConstant(m, "RUN_EAGERLY", RUN_EAGERLY) < 0 ||
        PyModule_AddIntConstant(m, "SKIP_UNTIL_RESET", SKIP_UNTIL_RESET) < 0) {
        Py_XDECREF(m);
        return NULL;
    }
    return m;
}
