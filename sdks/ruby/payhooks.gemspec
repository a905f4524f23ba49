# frozen_string_literal: true

require_relative 'lib/payhooks/version'

Gem::Specification.new do |spec|
  spec.name = 'payhooks'
  spec.version = Payhooks::VERSION
  spec.summary = 'Receive payhooks webhooks correctly: verify, deduplicate, acknowledge at once, credit once.'
  spec.description = 'Verifies the Service-Signature of payhooks deliveries over the raw body in constant time, ' \
                     'records evt_ ids in PostgreSQL, Redis or memory, acknowledges at once and runs your work ' \
                     'with retries, and credits each payment once. A Rack adapter for Rails, Sinatra and the rest.'
  spec.license = 'MIT'
  spec.authors = ['payhooks']
  spec.homepage = 'https://github.com/payhooks/payhooks/tree/main/sdks/ruby'
  spec.required_ruby_version = '>= 3.0'
  spec.files = Dir['lib/**/*.rb'] + %w[README.md LICENSE]
  spec.require_paths = ['lib']
  spec.metadata['rubygems_mfa_required'] = 'true'
  # No runtime dependencies: the stores need the pg or redis gem only when you use them.
  spec.add_development_dependency 'minitest', '>= 5.15', '< 6'
  spec.add_development_dependency 'pg', '>= 1.2', '< 2'
  spec.add_development_dependency 'rake', '>= 13', '< 14'
  spec.add_development_dependency 'rack', '>= 2.2', '< 4'
  spec.add_development_dependency 'redis', '>= 4.6', '< 6'
  spec.add_development_dependency 'sinatra', '>= 3.0', '< 5'
end
