# frozen_string_literal: true

module Payhooks
  VERSION = '0.1.0'
end
