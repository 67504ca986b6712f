"""Pure renderers: RocketMQ config files and Kubernetes objects from validated resources.

No I/O: same input, same output. Platforms decide placement (addresses, ports, paths); renderers decide keys.
"""
