/** The Payment every benchmark publisher sends (`data.object` of payment.succeeded), numbered. */
export function samplePayment(i: number) {
  return {
    id: `pay_${i}`,
    object: 'payment',
    status: 'succeeded',
    amount: '10.00',
    asset_code: 'USDC.ETH',
    metadata: { order: `ord_${i}` },
  };
}
