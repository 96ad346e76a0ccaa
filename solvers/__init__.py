"""The engines, one package each behind the interface of :mod:`.base`: A* search (``astar``), the
MILP on HiGHS or Gurobi (``milp``), SAT (``sat``) and the brute-force oracle (``oracle``);
:mod:`.registry` lists them under the names the language uses, and :mod:`.solve` is the one way
to run one."""
