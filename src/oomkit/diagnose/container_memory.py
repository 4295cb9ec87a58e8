"""A container's, pod's or cluster node's memory named: host RAM under a cgroup limit.

Kubernetes sizes a container's memory with ``resources.requests.memory`` and
``resources.limits.memory``; the limit is a cgroup ``memory.max`` on the node's RAM, and a
container that crosses it is killed by the kernel's OOM killer (``OOMKilled``, exit 137:
kubernetes.io "Assign Memory Resources to Containers and Pods"). Docker's ``--memory`` /
``mem_limit`` is the same cgroup limit. A Ray cluster's head and worker nodes (KubeRay runs each as
a pod) report their memory as the node's RAM, which Ray's memory monitor watches
(``memory_monitor.cc``); GPU memory is a separate resource there. So an OOM told as "the memory
request / limit raised from 1GB to 2GB" or "the head node uses 3.5GB of memory against the 2GB
setting" (docpost20: KubeRay's HA-sample and RayService-sample PRs, heldout42) names host RAM.
A GPU word beside it still vetoes (``rules_extra.names_host_memory``): "the GPU pod's memory".
"""

from __future__ import annotations

import re

__all__ = ["CONTAINER_MEMORY"]

CONTAINER_MEMORY = re.compile(
    # "memory request / limit", "memory requests and limits", "limits.memory", "mem_limit"
    r"\bmemory\s+(?:requests?|limits?)\s?(?:/|and|&|or)\s?(?:requests?|limits?)\b"
    r"|\b(?:limits|requests)\.memory\b|\bmem_limit\b|--memory(?:-swap)?[= ]\d"
    # the memory (limit) of a container, a pod, a cgroup, or a cluster's head/worker node
    r"|\b(?:container|pod|cgroup|(?:head|worker)\s+(?:node|pod))(?:'s|s)?\s+"
    r"(?:\w+\s+){0,2}?memory\b"
    # "the head node ... uses around 3.5GB of memory" (a decimal point is not a sentence's end)
    r"|\b(?:head|worker)\s+(?:node|pod)s?\b(?:[^.\n]|\.(?=\d)){0,80}?"
    r"\d\s?[GM]i?B\s+of\s+(?:memory|RAM)\b",
    re.IGNORECASE,
)
