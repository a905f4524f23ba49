# frozen_string_literal: true

# Runs every test file: ruby -Itest test/all.rb [-v]
Dir[File.join(__dir__, 'test_*.rb')].sort.each { |file| require file unless file.end_with?('test_helper.rb') }
