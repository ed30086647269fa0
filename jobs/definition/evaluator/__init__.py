"""The SQL expression evaluator's parts (:mod:`jobs.definition.expr` is its entry point and
allow-list):

* ``values``: coercions and casts as Spark does them, :class:`ExpressionError`, the ANSI mode;
* ``datepatterns``: Java date-time patterns (read and format);
* ``compiler``: :func:`build` and the table of node builders, the leaves' builders;
* ``operators``: arithmetic, comparison, logic, ``IN``, ``BETWEEN``, ``LIKE``;
* ``functions``: conditionals, casts, strings, math, JSON;
* ``times``: the time functions.

Importing the package registers every builder (the modules' ``@_builds`` decorators).
"""

from jobs.definition.evaluator import compiler, functions, operators, times, values

__all__ = ["compiler", "functions", "operators", "times", "values"]
