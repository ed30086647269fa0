"""The definition parser's parts (:mod:`jobs.definition.parse` is its entry point):

* ``document``: text -> mapping, safely (size, nesting, duplicate keys);
* ``fields``: the field readers and the error collector;
* ``source``: ``source``, ``key`` / ``event_time`` expressions, ``sink``;
* ``timing``: ``watermark``, ``window``, ``trigger``;
* ``aggregations``: ``aggregations``.
"""
