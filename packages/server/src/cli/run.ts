// The `payhooks` executable's entry: bin/payhooks.js imports the compiled form of this file.
import { main } from './main.ts';

await main(process.argv);
