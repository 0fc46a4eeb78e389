"""Add-ons that plug into the engine through its observer protocol: niches, memory."""
