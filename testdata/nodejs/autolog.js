// A Pulumi Node.js program with a stack transform and two resource hooks, on
// the stand-in random provider: callbacklog's TestAutoLogOfARealNodeJSProgram
// runs it under the real CLI and reads the engine's lines about its calls in
// the automatic log.
"use strict";
const pulumi = require("@pulumi/pulumi");

// Every RandomPet gets the prefix "node"; options are kept as they are.
pulumi.runtime.registerResourceTransform((args) => {
    if (args.type !== "random:index/randomPet:RandomPet") {
        return undefined;
    }
    return { props: { ...args.props, prefix: "node" }, opts: args.opts };
});

const before = new pulumi.ResourceHook("node-before-create", async () => {});
const after = new pulumi.ResourceHook("node-after-create", async () => {});

const pet = new pulumi.CustomResource("random:index/randomPet:RandomPet", "pet", { length: 2 }, {
    hooks: { beforeCreate: [before], afterCreate: [after] },
});

exports.petId = pet.id;
