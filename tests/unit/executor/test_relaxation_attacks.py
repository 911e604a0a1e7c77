"""Attacks on each construct the Python layer accepts for ordinary agent code: the safe
``str.format``, ``getattr`` with a default, ``super()``, ``property``, the special methods
a class body may define, augmented assignment to attributes and items, and annotations.

Same rules as ``test_python_layer_attacks``: each attack names the refusal it expects
(layer and reason) and reaches its ESCAPED line under plain CPython; each test also runs
the ordinary program that needs the construct.
"""

from __future__ import annotations

import pytest
from terminai_apts.executor import execute
from terminai_apts.executor.policy import Mode

from tests.unit.executor.test_python_layer_attacks import ALL_MODES, A, N, cfg, run_attacks, run_benign


@pytest.mark.parametrize("mode", ALL_MODES)
def test_format_fields_go_through_the_guards(mode: Mode) -> None:
    run_attacks(
        [
            A(
                "print('{0.__class__.__subclasses__}'.format(1), 'ESCAPED')",
                "L4-runtime-guard",
                "attribute '__subclasses__' is not allowed",
            ),
            A(
                "print('{0.__globals__}'.format(lambda: 0), 'ESCAPED')",
                "L4-runtime-guard",
                "attribute '__globals__' is not allowed",
            ),
            A(
                "print('{0.__globals__[__builtins__]}'.format(lambda: 0), 'ESCAPED')",
                "L4-runtime-guard",
                "attribute '__globals__' is not allowed",
            ),
            A(
                "def f():\n    yield 1\nprint('{0.gi_frame.f_globals}'.format(f()), 'ESCAPED')",
                "L4-runtime-guard",
                "attribute 'gi_frame' is not allowed",
            ),
            A(
                "print('{a.__class__.__base__}'.format_map({'a': 1}), 'ESCAPED')",
                "L4-runtime-guard",
                "attribute '__base__' is not allowed",
            ),
            A(
                "print('{0:{1.__doc__[0]}}'.format('x', ''), 'ESCAPED')",
                "L4-runtime-guard",
                "attribute '__doc__' is not allowed",
            ),
            A(
                "print(str.format('{}', 1), 'ESCAPED')",
                "L4-runtime-guard",
                "attribute 'format' is allowed only on a string",
            ),
            A("print(str.format, 'ESCAPED')", "L4-runtime-guard", "attribute 'format' is allowed only on a string"),
            A(
                "print(str.format_map, 'ESCAPED')",
                "L4-runtime-guard",
                "attribute 'format_map' is allowed only on a string",
            ),
        ],
        mode,
    )
    run_benign(
        "class M:\n    def __init__(self):\n        self.title = 'GPU plan'\n"
        "print('{:.2f}|{:>5}|{name}'.format(3.14159, 'ab', name='n'), '{0:.1f}{0:.0f}'.format(2.5))\n"
        "print('{m.title} {d[k]} {l[1]}'.format(m=M(), d={'k': 'v'}, l=[1, 2]))\n"
        "print('{a}-{b}'.format_map({'a': 1, 'b': 2}), '{{}}'.format())\n",
        mode,
        "3.14|   ab|n 2.52\nGPU plan v 2\n1-2 {}\n",
    )


@pytest.mark.parametrize("mode", ALL_MODES)
def test_getattr_with_a_default(mode: Mode) -> None:
    run_attacks(
        [
            A(
                "print(getattr(getattr(1, '__class__'), '__base__', None), 'ESCAPED')",
                "L4-runtime-guard",
                "attribute '__base__' is not allowed",
            ),
            A(
                "print(getattr(getattr(1, '__class__'), 'mro'), 'ESCAPED')",
                "L4-runtime-guard",
                "attribute 'mro' is not allowed",
            ),
            A(
                "print(getattr(lambda: 0, '__globals__', 0), 'ESCAPED')",
                "L4-runtime-guard",
                "attribute '__globals__' is not allowed",
            ),
            A(
                "def g():\n    yield 1\nprint(getattr(g(), 'gi_frame', 0), 'ESCAPED')",
                "L4-runtime-guard",
                "attribute 'gi_frame' is not allowed",
            ),
            A("print(getattr(1, 'mro', 0), 'ESCAPED')", "L4-runtime-guard", "attribute 'mro' is not allowed"),
            A(
                "print(getattr(str, 'format', 0), 'ESCAPED')",
                "L4-runtime-guard",
                "attribute 'format' is allowed only on a string",
            ),
            A(
                "print(getattr(getattr, 'guard', 0), getattr(getattr, '_guard', 0), 'ESCAPED')",
                "L4-runtime-guard",
                "attribute '_guard' is not allowed",
            ),
        ],
        mode,
    )
    run_benign(
        "class C:\n    def __init__(self):\n        self.name = 'n'\n"
        "c = C()\nprint(getattr(c, 'name'), getattr(c, 'missing', 'default'), getattr(1, 'real'))\n",
        mode,
        "n default 1\n",
    )


@pytest.mark.parametrize("mode", ALL_MODES)
def test_super_reaches_only_the_base_methods(mode: Mode) -> None:
    run_attacks(
        [
            N(
                "class A:\n    def f(self):\n        return super().__class__\nc = A().f()\nprint(type(c).__name__, c)",
                "TypeView <class 'SuperProxy'>\n",
            ),
            A(
                "class A:\n    def f(self):\n"
                "        return getattr(super().__class__, '__init__')\nprint(A().f(), 'ESCAPED')",
                "L4-runtime-guard",
                "attribute '__init__' is not allowed",
            ),
            A(
                "class A:\n    def f(self):\n        return super().__self__\nprint(A().f(), 'ESCAPED')",
                "L2-validate",
                "attribute '__self__' is not allowed",
            ),
            A(
                "class A:\n    def f(self):\n        return super().__init_subclass__\nprint(A().f(), 'ESCAPED')",
                "L2-validate",
                "attribute '__init_subclass__' is not allowed",
            ),
            A(
                "class A:\n    def f(self):\n        return super().__getattribute__\nprint(A().f(), 'ESCAPED')",
                "L2-validate",
                "attribute '__getattribute__' is not allowed",
            ),
            A(
                "class A:\n    def f(self):\n        return super(A, self)\nprint(A().f(), 'ESCAPED')",
                "L4-runtime-guard",
                "super() takes no arguments in the sandbox",
            ),
            A(
                "class A:\n    def f(self):\n        s = super()\n        return s.__init__\nprint(A().f(), 'ESCAPED')",
                "L2-validate",
                "attribute '__init__' is not allowed",
            ),
            # a method called on the class with a class as `self`
            A(
                "class A:\n    def f(self):\n        return super().__init__\nprint(A.f(A), 'ESCAPED')",
                "RuntimeError",
                "super(): the method's first argument is not an instance of its class",
            ),
            # the proxy has no public helper that reads a name unchecked
            A(
                "class A:\n    def f(self):\n        return super().__self_class__\nprint(A().f(), 'ESCAPED')",
                "L2-validate",
                "attribute '__self_class__' is not allowed",
            ),
            A(
                "class A:\n    def f(self):\n        return super().__thisclass__\nprint(A().f(), 'ESCAPED')",
                "L2-validate",
                "attribute '__thisclass__' is not allowed",
            ),
            A(
                "class A:\n    def f(self):\n        super = 3\n"
                "        return super.__init__\nprint(A().f(), 'ESCAPED')",
                "L2-validate",
                "attribute '__init__' is not allowed",
            ),
        ],
        mode,
    )
    run_benign(
        "class Base:\n    def __init__(self, n):\n        self.n = n\n    def __repr__(self):\n"
        "        return f'Base({self.n})'\n    def describe(self):\n        return 'base'\n"
        "class Child(Base):\n    def __init__(self, n):\n        super().__init__(n * 2)\n"
        "    def __repr__(self):\n        return 'Child:' + super().__repr__()\n"
        "    def describe(self):\n        return 'child of ' + super().describe()\n"
        "class E(Exception):\n    def __init__(self, msg):\n        super().__init__('E: ' + msg)\n"
        "c = Child(2)\nprint(repr(c), c.describe())\ntry:\n    raise E('x')\nexcept E as e:\n    print(e)\n",
        mode,
        "Child:Base(4) child of base\nE: x\n",
    )


@pytest.mark.parametrize("mode", ALL_MODES)
def test_property_is_the_sandbox_own(mode: Mode) -> None:
    run_attacks(
        [
            A(
                "class A:\n    x = property(repr)\nprint(A().x, 'ESCAPED')",
                "L4-runtime-guard",
                "property() accepts only functions defined in the program",
            ),  # only program functions
            A(
                "class A:\n    x = property(print)\nprint('ESCAPED')",
                "L4-runtime-guard",
                "property() accepts only functions defined in the program",
            ),
            A(
                "class A:\n    @property\n    def x(self):\n        return 1\nprint(A.x, 'ESCAPED')",
                "AttributeError",
                "a property is read on an instance, not on its class",
            ),  # no descriptor
            A(
                "p = property(lambda s: 1)\nprint(p.fget, 'ESCAPED')",
                "AttributeError",
                "'SandboxProperty' object has no attribute 'fget'",
            ),
            A(
                "p = property(lambda s: 1)\nprint(p.__get__, 'ESCAPED')",
                "L2-validate",
                "attribute '__get__' is not allowed",
            ),
            A(
                "class P(property):\n    pass\nprint('ESCAPED')",
                "L4-runtime-guard",
                "base classes must be plain classes",
            ),
        ],
        mode,
    )
    run_benign(
        "class T:\n    def __init__(self):\n        self.c = 20.0\n    @property\n    def f(self):\n"
        "        return self.c * 9 / 5 + 32\n    @f.setter\n    def f(self, v):\n        self.c = (v - 32) * 5 / 9\n"
        "t = T()\nprint(t.f)\nt.f = 212\nprint(t.c)\n",
        mode,
        "68.0\n100.0\n",
    )


@pytest.mark.parametrize("mode", ALL_MODES)
def test_special_methods_called_by_c_code(mode: Mode) -> None:
    run_attacks(
        [
            # names outside the list stay refused, however they are bound
            A(
                "class I:\n    def __index__(self):\n        return 0\nprint('ESCAPED')",
                "L2-validate",
                "name '__index__' may not be bound",
            ),
            A(
                "class I:\n    def __getattr__(self, n):\n        return 0\nprint('ESCAPED')",
                "L2-validate",
                "name '__getattr__' may not be bound",
            ),
            A(
                "class I:\n    def __init_subclass__(cls):\n        pass\nprint('ESCAPED')",
                "L2-validate",
                "name '__init_subclass__' may not be bound",
            ),
            A(
                "class I:\n    def __set_name__(self, o, n):\n        pass\nprint('ESCAPED')",
                "L2-validate",
                "name '__set_name__' may not be bound",
            ),
            A(
                "class I:\n    def __reduce__(self):\n        return 0\nprint('ESCAPED')",
                "L2-validate",
                "name '__reduce__' may not be bound",
            ),
            A(
                "class I:\n    def __del__(self):\n        pass\nprint('ESCAPED')",
                "L2-validate",
                "name '__del__' may not be bound",
            ),
            A(
                "class I:\n    def __format__(self, s):\n        return ''\nprint('ESCAPED')",
                "L2-validate",
                "name '__format__' may not be bound",
            ),
            A(
                "def __len__(self):\n    return 0\nprint('ESCAPED')",
                "L3-validate",  # the restricted compile runs on the host, before any run
                '"__len__" is an invalid variable name because it starts with "_"',
            ),  # module level
            A(
                "class L:\n    __len__ = lambda self: 0\nprint('ESCAPED')",
                "L2-validate",
                "names starting with '_' are not allowed: '__len__'",
            ),
        ],
        mode,
    )
    # odd return values and comparisons that mutate the list being sorted: the
    # interpreter's own checks (not refusals of the Python layer: CPython raises the same
    # without it), asserted here as what they are, an ordinary error and never a crash
    for code, error in (
        ("class L:\n    def __len__(self):\n        return 2 ** 80\nprint(len(L()))", "OverflowError"),
        ("class L:\n    def __len__(self):\n        return -1\nprint(len(L()))", "ValueError"),
        ("class L:\n    def __len__(self):\n        return 'x'\nprint(len(L()))", "TypeError"),
        ("class L:\n    def __iter__(self):\n        return 5\nprint(list(L()))", "TypeError"),
        ("class L:\n    def __repr__(self):\n        return 5\nprint(repr(L()))", "TypeError"),
        ("class L:\n    def __str__(self):\n        return self\nprint(L())", "TypeError"),
        ("class L:\n    def __repr__(self):\n        return repr(self)\nprint(repr(L()))", "RecursionError"),
        (
            "xs = []\nclass K:\n    def __init__(self, v):\n        self.v = v\n"
            "    def __lt__(self, o):\n        xs.clear()\n        xs.extend([1, 'a'])\n        return self.v < o.v\n"
            "xs.extend(K(i) for i in range(50))\nxs.sort()\nprint(xs[0] + 1)",
            "ValueError",
        ),
        ("class K:\n    def __eq__(self, o):\n        raise ValueError('no')\nprint([K()].index(K()))", "ValueError"),
    ):
        result = execute(code, cfg(mode))
        assert (result.success, result.error_type, result.stdout) == (False, error, ""), (code, result.error)
    # an exception class whose __str__ fails: reported, never a crash of the run
    result = execute("class E(Exception):\n    def __str__(self):\n        return 1 / 0\nraise E()", cfg(mode))
    assert not result.success and result.error_type == "E" and "could not be rendered" in (result.error or "")
    run_benign(
        "class Bag:\n    def __init__(self, items):\n        self.items = list(items)\n"
        "    def __len__(self):\n        return len(self.items)\n    def __iter__(self):\n"
        "        return iter(self.items)\n    def __contains__(self, x):\n        return x in self.items\n"
        "    def __eq__(self, o):\n        return isinstance(o, Bag) and self.items == o.items\n"
        "    def __lt__(self, o):\n        return len(self) < len(o)\n    def __str__(self):\n"
        "        return 'Bag' + str(self.items)\n    def __bool__(self):\n        return bool(self.items)\n"
        "bags = [Bag([1, 2, 3]), Bag([]), Bag([4])]\n"
        "print(len(bags[0]), 2 in bags[0], Bag([4]) == bags[2], [len(b) for b in sorted(bags)], str(bags[2]),"
        " [bool(b) for b in bags])\n",
        mode,
        "3 True True [0, 1, 3] Bag[4] [True, False, True]\n",
    )


@pytest.mark.parametrize("mode", ALL_MODES)
def test_augmented_assignment_to_attributes_and_items(mode: Mode) -> None:
    run_attacks(
        [
            # the write guard still decides what may be modified
            A(
                "class A:\n    pass\nA.__module__ += 'x'\nprint('ESCAPED')",
                "L2-validate",
                "attribute '__module__' is not allowed",
            ),
            # the hidden temporaries cannot be named
        ],
        mode,
    )
    run_benign(
        "class Stats:\n    count = 0\n    def __init__(self):\n        self.n = 0\n        self.by = {}\n"
        "    def add(self, k):\n        self.n += 1\n        self.by[k] = self.by.get(k, 0)\n        self.by[k] += 1\n"
        "s = Stats()\nfor k in 'abca':\n    s.add(k)\nStats.count += 1\n"
        "grid = [[0, 0], [0, 0]]\ngrid[1][0] += 5\nd = {'x': [1]}\nd['x'] += [2]\n"
        "print(s.n, s.by, Stats.count, grid, d)\n",
        mode,
        "4 {'a': 2, 'b': 1, 'c': 1} 1 [[0, 0], [5, 0]] {'x': [1, 2]}\n",
    )


@pytest.mark.parametrize("mode", ALL_MODES)
def test_long_elif_chain_and_strict_exception_names(mode: Mode) -> None:
    chain = "x = 321\nif x == 0:\n    y = 0\n" + "".join(f"elif x == {i}:\n    y = {i}\n" for i in range(1, 500))
    run_benign(chain + "else:\n    y = -1\nprint(y)\n", mode, "321\n")
    run_benign(
        "out = []\nfor exc in (LookupError, AttributeError, RuntimeError, StopIteration, AssertionError,"
        " NotImplementedError, OverflowError, UnicodeError, NameError):\n"
        "    try:\n        raise exc('x')\n    except exc as e:\n        out.append(str(e))\n"
        "try:\n    {}['k']\nexcept LookupError:\n    out.append('lookup')\nprint(len(out), out[-1])\n",
        mode,
        "10 lookup\n",
    )


@pytest.mark.parametrize("mode", ["standard", "high"])
def test_comparisons_that_mutate_containers_inside_c_code(mode: Mode) -> None:
    """Historical use-after-free shapes (heapq, bisect, list.index/count, dict lookups with a
    comparison that mutates the container): each ends in an ordinary error or result."""
    mutate = (
        "box = []\nclass K:\n    def __init__(self, v):\n        self.v = v\n"
        "    def __lt__(self, o):\n        box.clear()\n        return self.v < o.v\n"
        "    def __eq__(self, o):\n        box.clear()\n        return False\n"
    )
    for tail in (
        "import heapq\nbox.extend(K(i) for i in range(20))\nheapq.heappush(box, K(-1))\nheapq.heappop(box)\n",
        "import heapq\nbox.extend(K(i) for i in range(20))\nheapq.heapify(box)\n",
        "import bisect\nbox.extend(K(i) for i in range(20))\nbisect.insort(box, K(5))\n",
        "box.extend(K(i) for i in range(20))\nprint(box.count(K(3)), K(3) in box)\n",
        "d = {}\nclass H(K):\n    def __hash__(self):\n        return 1\n"
        "    def __eq__(self, o):\n        d.clear()\n        return False\n"
        "for i in range(10):\n    d[H(i)] = i\n",
    ):
        result = execute(mutate + tail + "print('done')", cfg(mode))
        assert result.success or result.error_type in ("IndexError", "ValueError", "RuntimeError", "TypeError"), (
            tail,
            result.error,
        )
        assert result.error_type != "ChildCrashed", tail
