"""The model runners: a KV-cached model that feeds ids after a cached prefix and rolls back (kv),
the CPU kernels that make a verify pass flat and exact (cpu_kernels), and devices."""
