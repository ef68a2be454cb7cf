package main

// The API server's part of a custom-resource write, as kube-apiserver does it, from the
// k8s.io/apiextensions-apiserver v0.36.0 libraries and KubeRay's own CRD files:
//
//   decode   = unstructuredSchemaCoercer.apply (pkg/apiserver/customresource_handler.go:1406-1471):
//              ObjectMeta read, pruning, nulls without defaults dropped, ObjectMeta coerced;
//              unknown-field paths are returned (fieldValidation=Strict turns them into an error,
//              customresource_handler.go:1338-1343)
//   default  = structuraldefaulting.Default with the schema after PruneDefaults (:1240-1248, :667-683)
//   prepare  = PrepareForCreate / PrepareForUpdate (pkg/registry/customresource/strategy.go:145-187)
//   validate = customResourceStrategy.Validate / ValidateUpdate (strategy.go:201-228, 274-320):
//              metadata, OpenAPI schema (with ratcheting on update), embedded ObjectMeta,
//              list-type invariants, CEL rules (oldSelf on update) unless a blocking error exists.
//
// registry/customresource.NewStrategy is the exact drop-in, but its package pulls in the generic
// registry (etcd client, grpc); the ~40 lines it runs are re-stated here with their citations.

import (
	"context"
	"fmt"
	"os"
	"sort"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metavalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/common"
	"sigs.k8s.io/yaml"
)

// crdVersion is what the API server keeps for one served version of a CRD.
type crdVersion struct {
	structural *structuralschema.Structural // defaults pruned, as served
	validator  apiservervalidation.SchemaValidator
	cel        *cel.Validator
}

type crd struct {
	group, kind string
	versions    map[string]*crdVersion // the served versions
	// storage is the version objects are stored in (apihelpers/helpers.go:181-189); conversion
	// the CRD's strategy, "None" when the CRD names none (apis/apiextensions/v1/defaults.go:49-53).
	storage, conversion string
}

func loadCRD(path string) (*crd, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var def apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(data, &def); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := &crd{group: def.Spec.Group, kind: def.Spec.Names.Kind, versions: map[string]*crdVersion{},
		conversion: string(apiextensionsv1.NoneConverter)}
	if def.Spec.Conversion != nil && def.Spec.Conversion.Strategy != "" {
		out.conversion = string(def.Spec.Conversion.Strategy)
	}
	for _, v := range def.Spec.Versions {
		if v.Storage {
			out.storage = v.Name
		}
		if !v.Served || v.Schema == nil {
			continue
		}
		// customresource_handler.go:653-683 (structural schema) and :796-813 (validator).
		internal := &apiextensions.CustomResourceValidation{}
		if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(v.Schema, internal, nil); err != nil {
			return nil, err
		}
		s, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
		if err != nil {
			return nil, fmt.Errorf("%s %s: not structural: %w", def.Name, v.Name, err)
		}
		s = s.DeepCopy()
		if err := structuraldefaulting.PruneDefaults(s); err != nil {
			return nil, err
		}
		validator, _, err := apiservervalidation.NewSchemaValidator(internal.OpenAPIV3Schema)
		if err != nil {
			return nil, err
		}
		out.versions[v.Name] = &crdVersion{
			structural: s,
			validator:  validator,
			// strategy.go:77: the CEL programs are compiled once per schema.
			cel: cel.NewValidator(s, true, celconfig.PerCallLimit),
		}
	}
	if _, ok := out.versions[out.storage]; !ok {
		return nil, fmt.Errorf("%s: the storage version %q is not served", def.Name, out.storage)
	}
	return out, nil
}

// Admission is the API server's answer to one write.
type Admission struct {
	Accepted bool `json:"accepted"`
	// Errors: the validation errors that reject the write (field.ErrorList strings).
	Errors []string `json:"errors,omitempty"`
	// UnknownFields are pruned; under fieldValidation=Strict (kubectl's default) they reject
	// the write instead ("strict decoding error").
	UnknownFields []string `json:"unknownFields,omitempty"`
	// Stored is the object as stored (pruned, defaulted), when accepted.
	Stored map[string]any `json:"-"`
}

// admit runs a create (old == nil) or an update of obj through decode, defaulting and validation.
// old is the stored object (already pruned and defaulted).
func (c *crd) admit(ctx context.Context, obj, old map[string]any) Admission {
	u := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(obj)}
	gv := u.GroupVersionKind()
	v, ok := c.versions[gv.Version]
	if gv.Group != c.group || u.GetKind() != c.kind || !ok {
		// A version the CRD does not serve has no endpoint: the request falls through to the
		// delegate, 404 (customresource_handler.go:313-316).
		return Admission{Errors: []string{fmt.Sprintf("no served version %q of %s.%s", u.GetAPIVersion(), c.kind, c.group)}}
	}
	unknown, err := coerce(u, v.structural)
	if err != nil {
		return Admission{Errors: []string{err.Error()}, UnknownFields: unknown}
	}
	structuraldefaulting.Default(u.Object, v.structural)

	var errs field.ErrorList
	if old == nil {
		// PrepareForCreate (strategy.go:145-156): status dropped, generation 1.
		delete(u.Object, "status")
		u.SetGeneration(1)
		errs = validateCreate(ctx, v, u)
	} else {
		uOld := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(old)}
		// PrepareForUpdate (strategy.go:159-187): the stored status is kept, and any change
		// outside metadata bumps the generation.
		if st, ok := uOld.Object["status"]; ok {
			u.Object["status"] = st
		} else {
			delete(u.Object, "status")
		}
		u.SetGeneration(uOld.GetGeneration())
		if !equalNonMetadata(u.Object, uOld.Object) {
			u.SetGeneration(uOld.GetGeneration() + 1)
		}
		errs = validateUpdate(ctx, v, u, uOld)
	}
	sort.Strings(unknown)
	if len(errs) > 0 {
		out := Admission{UnknownFields: unknown}
		for _, e := range errs {
			out.Errors = append(out.Errors, e.Error())
		}
		return out
	}
	return Admission{Accepted: true, UnknownFields: unknown, Stored: u.Object}
}

// coerce is unstructuredSchemaCoercer.apply (customresource_handler.go:1406-1471) with
// ReturnUnknownFieldPaths on, for a kind this CRD serves.
func coerce(u *unstructured.Unstructured, s *structuralschema.Structural) ([]string, error) {
	kind, apiVersion := u.GetKind(), u.GetAPIVersion()
	objectMeta, foundMeta, unknown, err := schemaobjectmeta.GetObjectMetaWithOptions(u.Object,
		schemaobjectmeta.ObjectMetaOptions{ReturnUnknownFieldPaths: true})
	if err != nil {
		return unknown, err
	}
	unknown = append(unknown, structuralpruning.PruneWithOptions(u.Object, s, true,
		structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})...)
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(u.Object, s)
	fieldErr, paths := schemaobjectmeta.CoerceWithOptions(nil, u.Object, s, false,
		schemaobjectmeta.CoerceOptions{ReturnUnknownFieldPaths: true})
	unknown = append(unknown, paths...)
	if fieldErr != nil { // a *field.Error: compared before it becomes an error interface
		return unknown, fieldErr
	}
	u.SetKind(kind)
	u.SetAPIVersion(apiVersion)
	if foundMeta {
		if err := schemaobjectmeta.SetObjectMeta(u.Object, objectMeta); err != nil {
			return unknown, err
		}
	}
	return unknown, nil
}

// validateCreate is customResourceStrategy.Validate (strategy.go:201-228) with
// customResourceValidator.Validate (validator.go:46-59); the scale subresource is not used by KubeRay.
func validateCreate(ctx context.Context, v *crdVersion, u *unstructured.Unstructured) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, metavalidation.ValidateObjectMetaAccessor(u, true, metavalidation.NameIsDNSSubdomain, field.NewPath("metadata"))...)
	errs = append(errs, apiservervalidation.ValidateCustomResource(nil, u.UnstructuredContent(), v.validator)...)
	errs = append(errs, schemaobjectmeta.Validate(nil, u.Object, v.structural, false)...)
	errs = append(errs, listtype.ValidateListSetsAndMaps(nil, v.structural, u.Object)...)
	if blocked, e := hasBlockingErr(errs); blocked {
		return append(errs, e)
	}
	celErrs, _ := v.cel.Validate(ctx, nil, v.structural, u.Object, nil, celconfig.RuntimeCELCostBudget)
	return append(errs, celErrs...)
}

// validateUpdate is customResourceStrategy.ValidateUpdate (strategy.go:274-320) with ratcheting:
// CRDValidationRatcheting is GA and locked on in v0.36.
func validateUpdate(ctx context.Context, v *crdVersion, u, old *unstructured.Unstructured) field.ErrorList {
	correlated := common.NewCorrelatedObject(u.Object, old.Object, &model.Structural{Structural: v.structural})
	var errs field.ErrorList
	errs = append(errs, metavalidation.ValidateObjectMetaAccessorUpdate(u, old, field.NewPath("metadata"))...)
	errs = append(errs, apiservervalidation.ValidateCustomResourceUpdate(nil, u.UnstructuredContent(), old.UnstructuredContent(),
		v.validator, apiservervalidation.WithRatcheting(correlated))...)
	errs = append(errs, schemaobjectmeta.Validate(nil, u.Object, v.structural, false)...)
	if oldErrs := listtype.ValidateListSetsAndMaps(nil, v.structural, old.Object); len(oldErrs) == 0 {
		errs = append(errs, listtype.ValidateListSetsAndMaps(nil, v.structural, u.Object)...)
	}
	if blocked, e := hasBlockingErr(errs); blocked {
		return append(errs, e)
	}
	celErrs, _ := v.cel.Validate(ctx, nil, v.structural, u.Object, old.Object, celconfig.RuntimeCELCostBudget,
		cel.WithRatcheting(correlated))
	return append(errs, celErrs...)
}

// hasBlockingErr is strategy.go:406-413.
func hasBlockingErr(errs field.ErrorList) (bool, *field.Error) {
	for _, err := range errs {
		switch err.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return true, field.Invalid(nil, nil, "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation")
		}
	}
	return false, nil
}

func equalNonMetadata(a, b map[string]any) bool {
	strip := func(m map[string]any) map[string]any {
		out := map[string]any{}
		for k, v := range m {
			if k != "metadata" {
				out[k] = v
			}
		}
		return out
	}
	return apiequality.Semantic.DeepEqual(strip(a), strip(b))
}

// ---- versions ---------------------------------------------------------------------------------
//
// A write in a version other than the storage version (ray.io/v1alpha1: served, not stored) is
// decoded, defaulted and validated with its own version's schema (admit), then converted to the
// storage version on its way to etcd, and defaulted again with the storage version's schema when
// it is read back (what the operator sees). KubeRay's CRDs name no conversion, so the strategy is
// None: nopConverter only relabels apiVersion (conversion/nop_converter.go:31-41), and the
// schemaCoercingConverter around it prunes with the target version's schema
// (customresource_handler.go:1357-1384 with apply, :1406-1471). Reading the stored object in
// another version (the old object of an update) is the reverse: defaulted with the storage
// schema as decoded from etcd, then converted (apimachinery versioning.go:167-193).

func versionOf(obj map[string]any) string {
	return (&unstructured.Unstructured{Object: obj}).GroupVersionKind().Version
}

// convert is the None strategy's conversion of obj to version, with the target version's pruning.
func (c *crd) convert(obj map[string]any, version string) (map[string]any, error) {
	u := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(obj)}
	if u.GroupVersionKind().Version == version {
		return u.Object, nil
	}
	if c.conversion != string(apiextensionsv1.NoneConverter) {
		return nil, fmt.Errorf("%s.%s: conversion strategy %s is not simulated", c.kind, c.group, c.conversion)
	}
	v, ok := c.versions[version]
	if !ok {
		return nil, fmt.Errorf("no served version %q of %s.%s", version, c.kind, c.group)
	}
	u.SetAPIVersion(c.group + "/" + version)
	if _, err := coerce(u, v.structural); err != nil {
		return nil, err
	}
	return u.Object, nil
}

// toStorage is an admitted object as the operator reads it: converted to the storage version
// (written), then defaulted with that version's schema (read).
func (c *crd) toStorage(obj map[string]any) (map[string]any, error) {
	out, err := c.convert(obj, c.storage)
	if err != nil {
		return nil, err
	}
	structuraldefaulting.Default(out, c.versions[c.storage].structural)
	return out, nil
}
