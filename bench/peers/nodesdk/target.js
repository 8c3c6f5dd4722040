// The Node.js SDK's target of bench/peers: a program whose callback server
// is the one in @pulumi/pulumi (the version installed in testdata/nodejs),
// with an identity stack transform registered through the SDK's public
// pulumi.runtime.registerResourceTransform.
//
// The driver starts it with the variables a Go program is given
// (PULUMI_MONITOR, PULUMI_ENGINE, PULUMI_PROJECT, PULUMI_STACK,
// PULUMI_ORGANIZATION, PULUMI_DRY_RUN, PULUMI_PARALLEL) and with NODE_PATH
// naming testdata/nodejs/node_modules. It configures the SDK's runtime from
// them, as the runner the Node.js language host starts does from its
// arguments, registers the transform, and waits in SignalAndWaitForShutdown
// until the driver ends the run, or until SIGINT or SIGTERM.
"use strict";

const pulumi = require("@pulumi/pulumi");
const settings = require("@pulumi/pulumi/runtime/settings");

function env(name) {
    const value = process.env[name];
    if (value === undefined || value === "") {
        throw new Error(`${name} is not set: this program is a target that bench/peers starts`);
    }
    return value;
}

// The transform returns the properties and options it was given rather than
// undefined: undefined means "unchanged" to the SDK, which then skips
// encoding the response, and a transform that changes something does not
// get that.
function identity(args) {
    return { props: args.props, opts: args.opts };
}

async function main() {
    settings.resetOptions(
        env("PULUMI_PROJECT"),
        env("PULUMI_STACK"),
        parseInt(env("PULUMI_PARALLEL"), 10),
        env("PULUMI_ENGINE"),
        env("PULUMI_MONITOR"),
        env("PULUMI_DRY_RUN") === "true",
        env("PULUMI_ORGANIZATION"),
    );
    await settings.awaitFeatureSupport();
    pulumi.runtime.registerResourceTransform(identity);
    await settings.awaitStackRegistrations();

    const stop = () => {
        settings.getCallbacks().shutdown();
        process.exit(0);
    };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
    await settings.signalAndWaitForShutdown();
    stop();
}

main().catch((err) => {
    console.error(`nodesdk: ${err && err.stack ? err.stack : err}`);
    process.exit(1);
});
