"""Generic helpers with no swarmnode imports: the lowest layer above the bundled assets.

- lru_map.py: `LRUMap`, a map with a size bound (least recently used out first, protected last)
- ratelimit.py: `TokenBucket` and `PeerRateLimiter` (per-peer rate limits in a bounded map)
- backoff.py: `backoff_delay` and `jittered`, retry delays
- errors.py: `first_line`, an error as one line for the one-line failures users read
- histogram.py: `BucketCounts`, observations counted in fixed buckets (a histogram's counts, any thread)
- priority.py: `lower_thread_priority`, a thread's nice value (training yields to the network)
- child_process.py: `python_module_command` and `child_environment`, a Python child that imports
  the very swarmnode package its parent runs
"""
