"""Campaigns: budgets, worker processes, shards, resume, shrinking and failure bundles."""

from fia_fuzz.campaign.config import CampaignConfig, parse_devices, parse_duration, parse_shard
from fia_fuzz.campaign.coordinator import CampaignSummary, run_campaign
from fia_fuzz.campaign.evaluate import evaluate

__all__ = ["CampaignConfig", "CampaignSummary", "evaluate", "parse_devices", "parse_duration",
           "parse_shard", "run_campaign"]
