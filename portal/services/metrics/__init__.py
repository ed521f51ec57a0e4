"""The Prometheus ``/metrics`` endpoint's business: who may scrape (:mod:`.access`, :mod:`.tokens`), and the metric
families built per scrape from what the collector stored (:mod:`.scope` reads the registry and the latest minute,
:mod:`.exporter` the rocketmq-exporter-compatible families, :mod:`.own` and :mod:`.health` the ``mqcloud_`` ones,
:mod:`.exposition` renders them). Nothing here asks a broker: a scrape costs a few set-based queries whatever the
cluster's size.
"""
