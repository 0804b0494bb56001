/* The SWIG typemaps live in arrayport/bind/swig/ with the other binding adapters; this path stays
 * so that interface files written against it keep building. */
%include "arrayport/bind/swig/arrayport.i"
