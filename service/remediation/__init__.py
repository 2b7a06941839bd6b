"""Remediation: drain, cordon or report bad hardware — off by default, opt-in per action."""
