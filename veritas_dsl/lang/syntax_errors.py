"""Labelled bad snippets: a syntax error that leaves the parser where one of these does gets its
label as the message (lark's ``match_examples``). Add a snippet when users hit a confusing error."""

LABELLED_ERRORS: dict[str, list[str]] = {
    "a query needs `{` after its name": [
        "query q input x",
        "query q for r in d[0:2] input x",
        "query q for r in d[0:2] where r.a > 0 input x",
        "property p forall x: x.a > 0",
    ],
    "`=` declares; compare with `==`": [
        "query q { where x.a = 1 }",
        "query q { input x where x.a = 1 and x.b > 0 }",
    ],
    "a declaration needs a name and `=`": [
        'model "m.json"',
        'data "d.csv"',
        'model m xgboost "m.json"',
    ],
    "a model or data file is given as a quoted path": [
        "model m = xgboost m.json",
        "data d = csv d.csv",
    ],
    "`where` needs a condition, such as `x.age >= 60`": [
        "query q { where }",
        "query q { input x where maximize m(x) }",
        "query q for r in d[0:2] where { input x }",
    ],
    "a condition compares two sides, such as `m(x) > 0`": [
        "query q { where x.a }",
        "query q { where x.a and x.b > 1 }",
        "property p { forall x: m(x) }",
        "query q for r in d[0:2] where r.a { input x }",
    ],
    "a feature range is written `in [lo, hi]`": [
        "features { a : real [0, 1] }",
        "features { a : int (0, 1) }",
        "features { a : real in (0, 1) }",
        "features { a : int [0, 1] }",
        "features { a : real (0, 1) }",
    ],
    "instance names are separated by commas": [
        "query q { input x, maximize m(x) }",
        "query q { input x y }",
    ],
    "`forall` lists its instances, then `:`": [
        "property p { forall x m(x) > 0 }",
        "property p { forall x, m(x) > 0 }",
    ],
    "unclosed block: `}` expected": [
        "query q { input x",
        "query q { maximize m(x)",
        "query q { where m(x) > 0",
        "query q { expect upper <= 1",
        "features { a : bool",
        "features { a : int in [0, 1]",
    ],
}
