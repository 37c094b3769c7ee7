"""Experiments of the introduction: the classic clustering picture and the consensus manifold.

* :mod:`.clustering` (``intro-clustering``): tokens on S^2 with Q = K = V = I, beta = 1, n = 64, from
  uniform initial positions, collapse into clusters and then into one.
* :mod:`.consensus` (``intro-consensus``): on the consensus manifold (all tokens at one point) the
  simulator against the closed form of paper C, Sec. 4.1 (:mod:`companion.theory.consensus`).
* :mod:`.sphere_merging` (``intro-sphere-merging``): tokens on S^2 at beta = 9, n = 128 gather into
  several clusters that persist and then merge one at a time (the hero animation draws it).
"""
from __future__ import annotations

# Imported in the order the experiments were declared in, which is their order in the registry.
from .clustering import ClusteringConfig, clustering, clustering_claims, clustering_summary, plot_clustering
from .consensus import TOL_EXACT, TOL_SLOPE, ConsensusConfig, consensus, consensus_claims, consensus_summary, plot_consensus
from .sphere_merging import (SphereMergingConfig, plot_sphere_merging, sphere_merging, sphere_merging_claims,
                             sphere_merging_summary)

__all__ = ["ClusteringConfig", "clustering", "plot_clustering", "clustering_summary", "clustering_claims",
           "ConsensusConfig", "consensus", "plot_consensus", "consensus_summary", "consensus_claims", "TOL_EXACT", "TOL_SLOPE",
           "SphereMergingConfig", "sphere_merging", "plot_sphere_merging", "sphere_merging_summary", "sphere_merging_claims"]
