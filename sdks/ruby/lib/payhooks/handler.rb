# frozen_string_literal: true

require 'json'
require 'set'
require_relative 'errors'
require_relative 'event_types'
require_relative 'webhook'
require_relative 'stores/store'

module Payhooks
  # The answer to send for one delivery.
  Response = Struct.new(:status, :headers, :body) do
    # A Rack response triple.
    def to_rack
      [status, headers, [body]]
    end
  end

  # What on_event receives besides the event: +attempt+ (1 for the first attempt at this event's
  # work) and +max_attempts+.
  EventContext = Struct.new(:attempt, :max_attempts)

  # The receive pipeline, framework-free: verify -> acknowledge and ignore the types you don't
  # handle -> insert-or-ignore the evt_ id -> answer 200 at once -> run the work on a thread of
  # the handler's pool, retried when it raises. Adapters (Payhooks::Rack) turn +handle+ into a route.
  #
  #   handler = Payhooks::WebhookHandler.new(secret: ENV['PAYHOOKS_WEBHOOK_SECRET'], store: store,
  #                                          types: ['payment.succeeded']) do |event, _context|
  #     payment = event['data']['object']
  #     store.credit_once(payment['id']) { |conn| ... }
  #   end
  #
  # The work is at-least-once: a retry after a failure, or a takeover after a crash, runs the
  # block again. Make its effects idempotent and credit with the store's credit_once.
  class WebhookHandler
    DEFAULT_RETRY_DELAYS = [1, 10, 60, 600, 3600].freeze
    JSON_HEADERS = { 'content-type' => 'application/json; charset=utf-8' }.freeze

    attr_reader :max_attempts

    # +secret+: the endpoint's whsec_ secret, or an Array during a rotation.
    # +public_keys+: the endpoint's whpk_ ed25519 public key(s), instead of or beside +secret+.
    # +store+: Payhooks::Stores::Memory, ::Postgres or ::Redis.
    # +types+: the event types you handle; others are answered 200 and ignored. A type outside the
    #   catalog raises Payhooks::ConfigurationError (a typo would acknowledge and drop every payment).
    # +on_error+: called with (error, info Hash: :phase, :event, :attempt, :will_retry).
    # +on_rejected+: called with the VerificationError of a delivery answered 400.
    # Durations are in seconds.
    def initialize(store:, secret: nil, public_keys: nil, on_event: nil, types: nil, on_error: nil, on_rejected: nil,
                   tolerance: DEFAULT_TOLERANCE, retry_delays: DEFAULT_RETRY_DELAYS, concurrency: 4,
                   lease: 300, poll_interval: 5, purge_interval: 3600, clock: -> { Time.now }, &block)
      # A missing or malformed secret or public key fails here, at start.
      keys = Internal.public_keys_of(public_keys)
      @secrets = Internal.secrets_of(secret, have_public_keys: !keys.empty?)
      @public_keys = public_keys
      @tolerance = Internal.tolerance_of(tolerance)
      raise ConfigurationError, 'payhooks: store is required: Stores::Memory, Stores::Postgres or Stores::Redis' unless store.respond_to?(:claim)

      @store = store
      @on_event = on_event || block
      raise ConfigurationError, 'payhooks: on_event (or a block) is required' unless @on_event.respond_to?(:call)

      @types = check_types(types)
      @on_error = on_error || method(:default_on_error)
      @on_rejected = on_rejected || method(:default_on_rejected)
      @delays = retry_delays.map { |d| Float(d) }
      raise ConfigurationError, 'payhooks: retry_delays must be >= 0' if @delays.any?(&:negative?)

      @max_attempts = @delays.length + 1
      @concurrency = positive_int(:concurrency, concurrency)
      @lease = Float(lease)
      @poll_interval = Float(poll_interval)
      @purge_interval = Float(purge_interval)
      @clock = clock
      @durable = store.respond_to?(:durable?) && store.durable? && store.respond_to?(:claim_due)
      @lock = Mutex.new
      @idle = ConditionVariable.new
      @queue = Queue.new
      @outstanding = 0 # queued or running
      @timers = [] # [at, kind, payload]
      @timer_wake = ConditionVariable.new
      @closed = false
      @pid = nil
      @threads = []
    end

    # Handles one delivery; returns a Response. Never raises.
    def handle(body:, headers:)
      return answer(503, error: 'receiver_closed') if @closed

      start_threads
      begin
        event = Webhook.verify(body: body, headers: headers, secret: @secrets, tolerance: @tolerance, now: @clock.call,
                               public_keys: @public_keys)
      rescue VerificationError => e
        # A failed verification is answered 400 and the event is not processed.
        safely { @on_rejected.call(e) }
        return answer(400, error: e.reason, message: e.message)
      rescue ConfigurationError => e
        report(e, phase: :receive, will_retry: true)
        return answer(500, error: 'internal_error', message: e.message)
      end
      # Acknowledge and ignore the types this receiver does not handle (the catalog grows).
      return answer(200, received: true, ignored: true) if @types && !@types.include?(event['type'])

      begin
        claim = @store.claim(event, @lease)
      rescue StandardError => e
        # Not recorded, not acknowledged: payhooks retries the delivery.
        report(e, phase: :store, event: event, will_retry: true)
        return answer(500, error: 'store_unavailable')
      end
      return answer(200, received: true, duplicate: true) if claim.nil?

      # Acknowledge now; the work runs from the pool.
      enqueue(event, claim)
      answer(200, received: true)
    end

    # Blocks until no work is queued or running (scheduled retries excluded). +timeout+ in seconds.
    def drain(timeout = nil)
      deadline = timeout && (monotonic + timeout)
      @lock.synchronize do
        while @outstanding.positive?
          left = deadline && (deadline - monotonic)
          return false if left && left <= 0

          @idle.wait(@lock, left)
        end
      end
      true
    end

    # Durable stores: claims due retries and abandoned work now and queues it; returns how many.
    def poll
      return 0 if !@durable || @closed

      start_threads
      room = (@concurrency * 2) - @lock.synchronize { @outstanding }
      due = @store.claim_due(room, @lease)
      due.each { |claim, event| enqueue(event, claim) }
      due.length
    rescue StandardError => e
      report(e, phase: :poll, will_retry: true)
      0
    end

    # Stops the timers and waits for running work. Deliveries after this are answered 503. With a
    # non-durable store, events waiting for an in-process retry are released, so a redelivery of
    # them is processed; with a durable one they stay in the table for the next process.
    def close
      pending = @lock.synchronize do
        @closed = true
        waiting = @timers.select { |_, kind, _| kind == :retry }.map { |_, _, claim| claim }
        @timers.clear
        @timer_wake.broadcast
        waiting
      end
      pending.each { |claim| safely { @store.release(claim) } }
      drain
      @threads.each { @queue << :stop }
      @threads.each { |t| t.join unless t == Thread.current }
      @threads.clear
      nil
    end

    private

    def answer(status, body)
      Response.new(status, JSON_HEADERS.dup, JSON.generate(body))
    end

    def check_types(types)
      return nil if types.nil?
      raise ConfigurationError, 'payhooks: types must be an Array of event types' unless types.is_a?(Array)

      types.each do |type|
        next if EVENT_TYPES.include?(type)

        raise ConfigurationError, "payhooks: unknown event type #{type.inspect} in types; known types: #{EVENT_TYPES.join(', ')}"
      end
      types.to_set
    end

    def positive_int(name, value)
      raise ConfigurationError, "payhooks: #{name} must be a positive integer" unless value.is_a?(Integer) && value.positive?

      value
    end

    def monotonic
      Process.clock_gettime(Process::CLOCK_MONOTONIC)
    end

    def safely
      yield
    rescue StandardError
      nil # a hook that raises must not break the pipeline
    end

    def report(error, info)
      safely { @on_error.call(error, info) }
    end

    def default_on_error(error, info)
      event = info[:event]
      where = event ? " for #{event['id']} (#{event['type']}), attempt #{info[:attempt] || '-'}" : ''
      warn "[payhooks] #{info[:phase]} error#{where}#{info[:will_retry] ? ', will retry' : ''}: #{error.class}: #{error.message}"
    end

    def default_on_rejected(error)
      hint = error.reason == 'bad_signature' ? " If every delivery is rejected, check that secret is this endpoint's whsec_ signing secret." : ''
      warn "[payhooks] rejected a delivery with 400: #{error.reason}: #{error.message}.#{hint}"
    end

    # Threads don't survive fork (Puma cluster, Unicorn): they are started in the process that
    # handles deliveries, on first use.
    def start_threads
      return if @pid == Process.pid

      @lock.synchronize do
        return if @pid == Process.pid

        @pid = Process.pid
        @threads = Array.new(@concurrency) { Thread.new { work_loop } }
        @threads << Thread.new { timer_loop }
        if @durable
          add_timer(0, :poll, nil)
          add_timer(@poll_interval, :poll_every, nil)
        end
        add_timer(@purge_interval, :purge, nil) if @store.respond_to?(:purge)
      end
    end

    def enqueue(event, claim)
      @lock.synchronize { @outstanding += 1 }
      @queue << [event, claim]
    end

    def work_loop
      loop do
        item = @queue.pop
        break if item == :stop

        event, claim = item
        begin
          attempt(event, claim)
        ensure
          @lock.synchronize do
            @outstanding -= 1
            @idle.broadcast if @outstanding.zero?
          end
        end
      end
    end

    # One attempt at the work for one event.
    def attempt(event, claim)
      begin
        @on_event.call(event, EventContext.new(claim.attempt, @max_attempts))
      rescue StandardError, ScriptError => e
        after_failure(event, claim, e)
        return
      end
      begin
        @store.complete(claim)
      rescue StandardError => e
        # Done but not marked: after the lease it may run again (it must be idempotent).
        report(e, phase: :store, event: event, attempt: claim.attempt, will_retry: @durable)
      end
    end

    def after_failure(event, claim, error)
      will_retry = claim.attempt < @max_attempts
      report(error, phase: :process, event: event, attempt: claim.attempt, will_retry: will_retry)
      if will_retry
        delay = @delays[claim.attempt - 1]
        @store.retry_later(claim, delay, @lease, error)
        if @closed
          @store.release(claim) unless @durable
        elsif @durable
          # The retry lives in the store; any instance's poller picks it up when due.
          schedule(delay + 0.01, :poll, nil)
        else
          schedule(delay, :retry, [event, Claim.new(claim.event_id, claim.token, claim.attempt + 1)])
        end
      elsif @durable && @store.respond_to?(:mark_failed)
        @store.mark_failed(claim, error)
      else
        # Given up: forget the id, so the next delivery of this event (a replay) is processed.
        @store.release(claim)
      end
    rescue StandardError => e
      report(e, phase: :store, event: event, attempt: claim.attempt, will_retry: @durable)
    end

    def schedule(delay, kind, payload)
      @lock.synchronize { add_timer(delay, kind, payload) }
    end

    # Holding @lock.
    def add_timer(delay, kind, payload)
      return if @closed

      @timers << [monotonic + delay, kind, payload]
      @timers.sort_by!(&:first)
      @timer_wake.broadcast
    end

    def timer_loop
      loop do
        due = []
        @lock.synchronize do
          loop do
            return if @closed

            now = monotonic
            due = @timers.take_while { |at, _, _| at <= now }
            break unless due.empty?

            wait = @timers.empty? ? nil : @timers.first.first - now
            @timer_wake.wait(@lock, wait)
          end
          @timers.shift(due.length)
        end
        due.each { |_, kind, payload| fire(kind, payload) }
      end
    end

    def fire(kind, payload)
      case kind
      when :retry
        event, claim = payload
        enqueue(event, claim)
      when :poll then poll
      when :poll_every
        poll
        schedule(@poll_interval, :poll_every, nil)
      when :purge
        begin
          @store.purge
        rescue StandardError => e
          report(e, phase: :store, will_retry: true)
        end
        schedule(@purge_interval, :purge, nil)
      end
    end
  end
end
