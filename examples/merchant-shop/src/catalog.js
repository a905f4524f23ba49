// What the shop sells. Prices are decimal strings with two decimals, as payhooks takes them.
export const PRODUCTS = [
  { id: 'tea', name: 'A pot of green tea', amount: '4.50', asset_code: 'USDC.ETH' },
  { id: 'mug', name: 'The payhooks mug <limited & "signed">', amount: '25.00', asset_code: 'USDC.ETH' },
];

export const productById = (id) => PRODUCTS.find((p) => p.id === id);
