package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
)

// protoFiles are the files of the protocol a callbacks server and a raw
// program speak: the Callbacks service and its envelope, the
// ResourceMonitor with every request and response of the callback kinds,
// and the Engine (for logging). Their imports come with them.
var protoFiles = []protoreflect.FileDescriptor{
	pulumirpc.File_pulumi_callback_proto,
	pulumirpc.File_pulumi_resource_proto,
	pulumirpc.File_pulumi_engine_proto,
}

// protoSetName is the FileDescriptorSet -protos writes.
const protoSetName = "pulumi-callbacks.fds.pb"

// descriptorSet returns the files above and everything they import, each
// after its imports, as a FileDescriptorSet built from the descriptors the
// Go SDK registers: the revision the kit speaks, not a copy of it.
func descriptorSet() *descriptorpb.FileDescriptorSet {
	set := &descriptorpb.FileDescriptorSet{}
	seen := map[string]bool{}
	var add func(fd protoreflect.FileDescriptor)
	add = func(fd protoreflect.FileDescriptor) {
		if seen[fd.Path()] {
			return
		}
		seen[fd.Path()] = true
		imports := fd.Imports()
		for i := 0; i < imports.Len(); i++ {
			add(imports.Get(i).FileDescriptor)
		}
		set.File = append(set.File, protodesc.ToFileDescriptorProto(fd))
	}
	for _, fd := range protoFiles {
		add(fd)
	}
	return set
}

// sdkVersion is the Pulumi SDK module the kit was built with.
func sdkVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/pulumi/pulumi/sdk/v3" {
				return d.Version
			}
		}
	}
	return "(unknown)"
}

// writeProtos writes the descriptor set and a README naming its revision
// into dir.
func writeProtos(dir string) error {
	set := descriptorSet()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(set)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, protoSetName), b, 0o644); err != nil {
		return err
	}
	var files []string
	for _, f := range set.GetFile() {
		files = append(files, "- "+f.GetName())
	}
	readme := fmt.Sprintf(`# The protocol callbackconform speaks

%s is a FileDescriptorSet (binary protobuf, descriptor.proto) of the
Pulumi protocol as compiled into github.com/pulumi/pulumi/sdk/v3 %s, the
revision this kit speaks. It holds these files, each after its imports:

%s

Load it with your runtime's descriptor support: in Node.js
@grpc/proto-loader's loadFileDescriptorSetFromBuffer (testdata/rawjs does),
in Python a google.protobuf descriptor_pool, or give it to protoc as
--descriptor_set_in. CONFORMANCE.md says which messages each callback kind
uses.
`, protoSetName, sdkVersion(), strings.Join(files, "\n"))
	return os.WriteFile(filepath.Join(dir, "README.md"), []byte(readme), 0o644)
}
