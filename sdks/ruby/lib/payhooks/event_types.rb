# frozen_string_literal: true

# Payhooks::EVENT_TYPES, the catalog, is generated from packages/contract.
require_relative 'generated'
