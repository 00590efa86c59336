"""Campaigns: budgets, recording, and (later) workers, shards, resume and bundles."""

from fia_fuzz.campaign.engine import CampaignConfig, CampaignSummary, parse_duration, run_campaign
from fia_fuzz.campaign.evaluate import evaluate

__all__ = ["CampaignConfig", "CampaignSummary", "evaluate", "parse_duration", "run_campaign"]
