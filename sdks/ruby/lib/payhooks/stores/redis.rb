# frozen_string_literal: true

require 'securerandom'
require_relative 'store'
require_relative '../errors'

module Payhooks
  module Stores
    # Redis store (the redis gem): SET key NX PX is the insert-or-ignore, atomic under concurrent
    # duplicates and across processes. Keys expire by themselves: processing after the lease (so
    # work lost with a dead process is not acknowledged as a duplicate forever), done after the
    # retention. Not durable for the work itself: run Redis with persistence and a non-evicting
    # policy, or seen ids may vanish early.
    #
    # credit_once marks the payment with SET NX (no expiry) before the block and done after it.
    # The marker is not in your ledger's transaction: if the process dies inside the block, the
    # payment stays pending and every later credit_once for it raises CreditInProgressError
    # (never a second credit) until you check the ledger and delete or set credit_key by hand.
    class Redis
      include Store

      # Compare-and-set on the holder's token, so a holder whose lease expired cannot undo a newer claim.
      COMPLETE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('SET', KEYS[1], 'done', 'PX', ARGV[2]) end return 0"
      EXTEND = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0"
      DELETE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"

      # +client+: a Redis client (redis gem). Thread-safe: the gem serialises commands.
      def initialize(client:, prefix: 'payhooks:', retention: DEDUP_RETENTION, credit_wait: 10)
        @redis = client
        @prefix = prefix
        @retention = Internal.check_retention(retention)
        @credit_wait = credit_wait
      end

      def durable?
        false
      end

      def event_key(event_id)
        "#{@prefix}event:#{event_id}"
      end

      def credit_key(payment_id)
        "#{@prefix}credit:#{payment_id}"
      end

      def claim(event, lease)
        claim = Claim.new(event['id'], SecureRandom.hex(16), 1)
        ok = @redis.set(event_key(claim.event_id), holding(claim), nx: true, px: ms(lease))
        ok ? claim : nil
      end

      def complete(claim)
        @redis.eval(COMPLETE, keys: [event_key(claim.event_id)], argv: [holding(claim), ms(@retention)])
      end

      def retry_later(claim, delay, lease, _error = nil)
        @redis.eval(EXTEND, keys: [event_key(claim.event_id)], argv: [holding(claim), ms(delay + lease)])
      end

      def release(claim)
        @redis.eval(DELETE, keys: [event_key(claim.event_id)], argv: [holding(claim)])
      end

      def credit_once(payment_id)
        Internal.check_payment_id(payment_id)
        key = credit_key(payment_id)
        deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + @credit_wait
        pause = 0.01
        loop do
          mine = "pending:#{SecureRandom.hex(16)}"
          if @redis.set(key, mine, nx: true)
            begin
              value = yield
            rescue StandardError, ScriptError
              @redis.eval(DELETE, keys: [key], argv: [mine])
              raise
            end
            @redis.set(key, 'done')
            return CreditResult.new(true, value)
          end
          current = @redis.get(key)
          return CreditResult.new(false, nil) if current == 'done'
          next if current.nil?

          # Another caller is crediting this payment: wait for its outcome.
          raise CreditInProgressError, payment_id if Process.clock_gettime(Process::CLOCK_MONOTONIC) >= deadline

          sleep(pause)
          pause = [pause * 2, 0.2].min
        end
      end

      private

      def holding(claim)
        "processing:#{claim.token}"
      end

      def ms(seconds)
        (seconds * 1000).ceil
      end
    end
  end
end
