# frozen_string_literal: true

require 'securerandom'
require_relative 'store'

module Payhooks
  module Stores
    # In-memory store: tests, development, a single-process receiver. Lost on exit, not shared
    # between processes. Safe under concurrent duplicates within the process.
    class Memory
      include Store

      def initialize(retention: DEDUP_RETENTION, clock: -> { Process.clock_gettime(Process::CLOCK_MONOTONIC) })
        @retention = Internal.check_retention(retention)
        @clock = clock
        @events = {}
        @credits = {}
        @lock = Mutex.new
        @credit_done = ConditionVariable.new
      end

      def durable?
        false
      end

      def claim(event, lease)
        @lock.synchronize do
          now = @clock.call
          existing = @events[event['id']]
          return nil if existing && existing[:expires_at] > now

          token = SecureRandom.hex(16)
          @events[event['id']] = { state: :processing, token: token, expires_at: now + lease }
          Claim.new(event['id'], token, 1)
        end
      end

      def complete(claim)
        update(claim) { |e| e.merge!(state: :done, token: nil, expires_at: @clock.call + @retention) }
      end

      def retry_later(claim, delay, lease, _error = nil)
        update(claim) { |e| e[:expires_at] = @clock.call + delay + lease }
      end

      def release(claim)
        @lock.synchronize { @events.delete(claim.event_id) if @events[claim.event_id]&.dig(:token) == claim.token }
      end

      # Deletes ids past retention and expired leases; returns how many.
      def purge
        @lock.synchronize do
          now = @clock.call
          before = @events.size
          @events.delete_if { |_, e| e[:expires_at] <= now }
          before - @events.size
        end
      end

      def size
        @lock.synchronize { @events.size }
      end

      # Runs the block once per payment id. Concurrent callers wait for the one running; if it
      # raises, the next caller credits. Returns a CreditResult.
      def credit_once(payment_id)
        Internal.check_payment_id(payment_id)
        @lock.synchronize do
          loop do
            case @credits[payment_id]
            when :done then return CreditResult.new(false, nil)
            when :running then @credit_done.wait(@lock)
            else
              @credits[payment_id] = :running
              break
            end
          end
        end
        begin
          value = yield
        rescue StandardError, ScriptError
          @lock.synchronize do
            @credits.delete(payment_id)
            @credit_done.broadcast
          end
          raise
        end
        @lock.synchronize do
          @credits[payment_id] = :done
          @credit_done.broadcast
        end
        CreditResult.new(true, value)
      end

      private

      def update(claim)
        @lock.synchronize do
          entry = @events[claim.event_id]
          yield entry if entry && entry[:token] == claim.token
        end
      end
    end
  end
end
