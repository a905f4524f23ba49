# frozen_string_literal: true

require_relative 'handler'

module Payhooks
  # The Rack adapter: Rails (mount it, or call it from a controller), Sinatra, Hanami, Roda, plain
  # rackup. It reads the raw body from rack.input, never parsed params.
  module Rack
    # Bodies above this are answered 413 without being read further (payhooks sends at most 64 KiB).
    DEFAULT_MAX_BODY_BYTES = 1 << 20

    module_function

    # Handles the delivery in +env+ with +handler+ and returns a Rack response triple.
    def call(handler, env, max_body_bytes: DEFAULT_MAX_BODY_BYTES)
      input = env['rack.input']
      return Response.new(400, WebhookHandler::JSON_HEADERS.dup, '{"error":"no_body"}').to_rack if input.nil?

      input.rewind if input.respond_to?(:rewind) # a framework may have read it for params already
      body = input.read(max_body_bytes + 1) || +''
      input.rewind if input.respond_to?(:rewind)
      if body.bytesize > max_body_bytes
        return Response.new(413, WebhookHandler::JSON_HEADERS.dup, '{"error":"body_too_large"}').to_rack
      end

      handler.handle(body: body, headers: env).to_rack
    end

    # A Rack application answering POST deliveries (mount it at your webhook path).
    class Endpoint
      def initialize(handler, max_body_bytes: DEFAULT_MAX_BODY_BYTES)
        @handler = handler
        @max_body_bytes = max_body_bytes
      end

      def call(env)
        unless env['REQUEST_METHOD'] == 'POST'
          return [405, { 'content-type' => 'application/json', 'allow' => 'POST' }, ['{"error":"method_not_allowed"}']]
        end

        Payhooks::Rack.call(@handler, env, max_body_bytes: @max_body_bytes)
      end
    end
  end
end
