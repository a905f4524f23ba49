/** Identifier prefixes. `evt_`, `mch_`, `pay_` and `whsec_` are the spec's; the rest are ours. */
export const ID_PREFIX = {
  event: 'evt_',
  merchant: 'mch_',
  payment: 'pay_',
  checkoutSession: 'cs_',
  platform: 'plt_',
  apiKey: 'key_',
  webhookEndpoint: 'we_',
  webhookDelivery: 'whd_',
  deliveryAttempt: 'wha_',
} as const;

export const SECRET_PREFIX = 'whsec_';
