"""Certification: levels graded from results, a fingerprint of the target, a self-contained page and badges."""
