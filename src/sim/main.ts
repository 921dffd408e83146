/** The simulator as a program (`node dist/sim/main.js …`): what `npm run sim` and each mutant's copy run. */
import { main } from './cli.js';

process.exitCode = await main(process.argv.slice(2));
