// nats.js as another team's service uses it: one JetStream call per run, JSON in and out.
//
//   node natsjs.mjs <server-url> add-stream <config-json>
//   node natsjs.mjs <server-url> add-consumer <stream> <config-json>
//   node natsjs.mjs <server-url> stream-config <stream>
//   node natsjs.mjs <server-url> consumer-config <stream> <consumer>
//   node natsjs.mjs <server-url> list-streams
//
// Prints the JSON nats.js reads back (a configuration, or a list of stream names).
import { connect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";

const [url, command, ...args] = process.argv.slice(2);
const nc = await connect({ servers: url });
try {
  const jsm = await jetstreamManager(nc);
  let out;
  switch (command) {
    case "add-stream":
      out = (await jsm.streams.add(JSON.parse(args[0]))).config;
      break;
    case "add-consumer":
      out = (await jsm.consumers.add(args[0], JSON.parse(args[1]))).config;
      break;
    case "stream-config":
      out = (await jsm.streams.info(args[0])).config;
      break;
    case "consumer-config":
      out = (await jsm.consumers.info(args[0], args[1])).config;
      break;
    case "list-streams":
      out = [];
      for await (const info of jsm.streams.list()) out.push(info.config.name);
      break;
    default:
      throw new Error(`unknown command ${command}`);
  }
  process.stdout.write(JSON.stringify(out));
} finally {
  await nc.close();
}
