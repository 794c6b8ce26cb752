"""Generated from resultsync's proto/ by clients/python/generate.sh: do not edit."""
